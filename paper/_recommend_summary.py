"""Summary, table and figure of the recommendation comparison (``recommend_bench.py``)."""

from __future__ import annotations

import textwrap
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from paper._study import now
from simulate import jsonable, save_figure

__all__ = [
    "cluster_bootstrap",
    "figure",
    "pick_record",
    "summarise",
    "table_md",
    "truth_bootstrap",
]


def pick_record(
    table: Any, p: Any, rng_seed: int | None, *, drop_info: Sequence[str] = ()
) -> dict[str, Any]:
    """A pick as stored in ``picks.json``: its setting (``{knob path: value}``), regret and
    stability with what it spent; ``drop_info`` names entries of ``p.info`` left out."""
    return jsonable({
        "method": p.method, "seed": p.seed, "rng_seed": rng_seed,
        "setting": table.as_dict(p.setting), "steps": p.steps, "budget": p.budget,
        "true_value": table.true_value(p.setting), "regret": table.regret(p.setting),
        "final_at_seed": table.final(p.setting, p.seed),
        "regime_at_seed": table.curve(p.setting, p.seed).regime,
        "unstable": table.unstable(p.setting, p.seed), "evaluated": len(p.trace),
        "info": {k: v for k, v in p.info.items() if k not in drop_info}, "created": now(),
    })  # fmt: skip


def cluster_bootstrap(
    values: dict[int, Sequence[float]], *, n_boot: int = 4000, seed: int = 0
) -> tuple[float, float]:
    """95 % percentile interval of the mean, resampling repetitions (clusters) and then the
    values within each.

    Args:
        values: Per repetition, its values (e.g. regrets of every run of a method).
        n_boot: Bootstrap resamples.
        seed: Seed of the resampling.

    Returns:
        ``(low, high)``.
    """
    rng = np.random.default_rng(seed)
    groups = [np.asarray(v, float) for v in values.values() if len(v)]
    means = np.empty(n_boot)
    for b in range(n_boot):
        pick = rng.integers(len(groups), size=len(groups))
        means[b] = np.mean(
            np.concatenate([rng.choice(groups[i], size=groups[i].size) for i in pick])
        )
    lo, hi = np.quantile(means, [0.025, 0.975])
    return float(lo), float(hi)


def truth_bootstrap(
    picks: list[dict[str, Any]],
    table: Any,
    methods: Sequence[str],
    *,
    against: str,
    n_boot: int = 2000,
    seed: int = 0,
) -> dict[str, Any]:
    """95 % intervals of each method's mean regret, and of its difference from ``against``'s,
    that include the noise of the cells' true values: every resample draws each cell's runs
    with replacement (its true value and the grid's best are recomputed) and the repetitions
    (clusters by pilot seed, then repetitions within; the same draw for every method, so the
    differences are paired).

    Args:
        picks: ``picks.json`` records (``method``, ``seed``, ``rng_seed``, ``setting``).
        table: The :class:`_recommend_table.RunTable` the picks were scored on.
        methods: Methods to report.
        against: The method the differences are taken from (``other - against``).
        n_boot: Resamples.
        seed: Seed of the resampling.

    Returns:
        ``{"regret": {method: [lo, hi]}, "difference": {method: {"mean", "ci95"}}}``.
    """
    rng = np.random.default_rng(seed)
    settings = list(table.settings)
    index = {x: k for k, x in enumerate(settings)}
    names = [k for k, _ in table.knobs]
    by_setting: dict[Any, list[float]] = {}
    for (x, _), c in table.curves.items():
        by_setting.setdefault(x, []).append(c.final)
    finals = [np.array(by_setting[s]) for s in settings]
    tv0 = np.array([f.mean() for f in finals])  # the table's true values
    reps = sorted({(int(p["seed"]), int(p["rng_seed"])) for p in picks})
    by_seed: dict[int, list[int]] = {}
    for k, (sd, _) in enumerate(reps):
        by_seed.setdefault(sd, []).append(k)
    cell = np.full((len(methods), len(reps)), -1)
    for p in picks:
        if p["method"] in methods:
            cell[
                list(methods).index(p["method"]), reps.index((int(p["seed"]), int(p["rng_seed"])))
            ] = index[table.norm(tuple(p["setting"][k] for k in names))]
    if (cell < 0).any():
        raise ValueError("every method needs a pick in every repetition")
    groups = list(by_seed.values())
    boot = np.empty((n_boot, len(methods)))
    for b in range(n_boot):
        tv = np.array([rng.choice(f, size=f.size).mean() for f in finals])
        pick = rng.integers(len(groups), size=len(groups))
        rows = np.concatenate([rng.choice(groups[i], size=len(groups[i])) for i in pick])
        boot[b] = (tv.max() - tv[cell[:, rows]]).mean(axis=1)
    a = list(methods).index(against)
    point = tv0.max() - tv0[cell].mean(axis=1)  # each method's mean regret

    def ci(x: np.ndarray) -> list[float]:
        return [float(v) for v in np.quantile(x, [0.025, 0.975])]

    return {
        "against": against,
        "n_boot": n_boot,
        "regret": {m: ci(boot[:, i]) for i, m in enumerate(methods)},
        "difference": {
            m: {"mean": float(point[i] - point[a]), "ci95": ci(boot[:, i] - boot[:, a])}
            for i, m in enumerate(methods)
            if i != a
        },
    }


def summarise(picks: list[dict[str, Any]], table: Any, methods: Sequence[str]) -> dict[str, Any]:
    """``summary.json``: per method the regret (mean, 95 % interval, per repetition) and the
    unstable picks (count, share), the steps spent; the grid's true values."""
    regret: dict[str, Any] = {}
    unstable: dict[str, Any] = {}
    steps: dict[str, float] = {}
    for m in methods:
        mine = [p for p in picks if p["method"] == m]
        by_seed: dict[int, list[float]] = {}
        for p in mine:
            by_seed.setdefault(int(p["seed"]), []).append(float(p["regret"]))
        vals = [float(p["regret"]) for p in mine]
        lo, hi = cluster_bootstrap(by_seed)
        regret[m] = {
            "mean": float(np.mean(vals)),
            "ci95": [lo, hi],
            "per_seed": {str(s): float(np.mean(v)) for s, v in sorted(by_seed.items())},
            "zero_regret_share": float(np.mean([v == 0.0 for v in vals])),
            "n": len(vals),
        }
        n_bad = sum(bool(p["unstable"]) for p in mine)
        unstable[m] = {"count": n_bad, "n": len(mine), "share": n_bad / len(mine)}
        steps[m] = float(np.mean([p["steps"] for p in mine]))
    best = max(table.settings, key=table.true_value)
    lowest = min(methods, key=lambda m: regret[m]["mean"])
    return {
        "regret": regret,
        "unstable_picks": unstable,
        "steps_spent_mean": steps,
        "lowest_mean_regret": lowest,
        "motif_model_lowest": lowest.startswith("motif model"),
        "motif_model_unstable_picks": {
            m: u["count"] for m, u in unstable.items() if m.startswith("motif model")
        },
        "best_setting": table.as_dict(best),
        "best_value": table.best_value(),
        "true_values": [table.as_dict(s) | {"value": table.true_value(s)} for s in table.settings],
        "regret_definition": "best mean final end-to-end accuracy on the grid (mean over "
        "seeds) minus the pick's; unstable: the pick's run at the repetition's seed "
        "oscillated or collapsed",
    }


def table_md(s: dict[str, Any]) -> str:
    """The README's table."""
    lines = [
        "| method | regret: mean [95 % CI] | per seed (0, 1, 2) | zero-regret picks "
        "| unstable picks | steps spent |",
        "|---|---|---|---|---|---|",
    ]
    noise = s.get("with_truth_noise")
    if noise:
        lines[0] += f" with the cells' noise: regret [95 % CI] | minus {noise['against']}'s |"
        lines[1] += "---|---|"
    for m, r in s["regret"].items():
        u = s["unstable_picks"][m]
        per = ", ".join(f"{v:.3f}" for v in r["per_seed"].values())
        row = (
            f"| {m} | {r['mean']:.3f} [{r['ci95'][0]:.3f}, {r['ci95'][1]:.3f}] | {per} | "
            f"{r['zero_regret_share']:.0%} | {u['count']}/{u['n']} | "
            f"{s['steps_spent_mean'][m]:.0f} |"
        )
        if noise:
            lo, hi = noise["regret"][m]
            d = noise["difference"].get(m)
            diff = f"{d['mean']:+.3f} [{d['ci95'][0]:+.3f}, {d['ci95'][1]:+.3f}]" if d else "-"
            row += f" [{lo:.3f}, {hi:.3f}] | {diff} |"
        lines.append(row)
    b = ", ".join(f"{k}={v:g}" if isinstance(v, float) else f"{k}={v}"
                  for k, v in s["best_setting"].items())  # fmt: skip
    lines.append("")
    lines.append(
        f"Best setting on the grid: {b} (mean final end-to-end accuracy {s['best_value']:.3f})."
    )
    return "\n".join(lines) + "\n"


def figure(s: dict[str, Any], picks: list[dict[str, Any]], table: Any, path: Path) -> None:
    """Regret per method (every pick, mean and interval) | the grid's true values with the
    methods' picks."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    methods = list(s["regret"])
    (kx, _), (ky, _) = [k for k in table.knobs if k[1] != "cat"][:2]
    cat = next((i for i, k in enumerate(table.knobs) if k[1] == "cat"), None)
    panels = [None] if cat is None else sorted({x[cat] for x in table.settings})
    fig, axes = plt.subplots(1, 1 + len(panels), figsize=(6 + 5 * len(panels), 4.2))
    a1 = axes[0]
    rng = np.random.default_rng(0)
    for i, m in enumerate(methods):
        mine = [p for p in picks if p["method"] == m]
        y = [p["regret"] for p in mine]
        col = ["C3" if p["unstable"] else "C0" for p in mine]
        a1.scatter(i + rng.uniform(-0.15, 0.15, len(y)), y, s=14, c=col, alpha=0.7)
        r = s["regret"][m]
        a1.errorbar(i + 0.3, r["mean"], yerr=[[r["mean"] - r["ci95"][0]],
                    [r["ci95"][1] - r["mean"]]], fmt="D", color="k", ms=5)  # fmt: skip
    a1.set_xticks(range(len(methods)), [textwrap.fill(m, 8) for m in methods], fontsize=8)
    a1.set_ylabel("regret (end-to-end accuracy)")
    a1.set_title("regret per pick (red: unstable), mean and 95 % CI")
    for a2, panel in zip(axes[1:], panels, strict=True):
        _grid_panel(a2, fig, methods, picks, table, kx, ky, cat, panel)
    fig.tight_layout()
    save_figure(fig, path)


def _grid_panel(a2: Any, fig: Any, methods: list[str], picks: list[dict[str, Any]],
                table: Any, kx: str, ky: str, cat: int | None, panel: Any) -> None:  # fmt: skip
    """The grid's true values over two ordered knobs (one value of the choice knob) with
    the methods' picks."""
    rows = [table.as_dict(x) for x in table.settings]
    cname = None if cat is None else table.knobs[cat][0]
    rows = [r for r in rows if cname is None or r[cname] == panel]
    xs, ys = sorted({r[kx] for r in rows}), sorted({r[ky] for r in rows})
    val = {(r[kx], r[ky]): table.true_value(tuple(r.values())) for r in rows}
    grid = np.array([[val.get((x, y), np.nan) for x in xs] for y in ys])
    im = a2.imshow(grid, origin="lower", cmap="viridis", vmin=0, vmax=1, aspect="auto")
    fig.colorbar(im, ax=a2, label="mean final end-to-end accuracy")
    a2.set_xticks(range(len(xs)), [f"{v:g}" for v in xs])
    a2.set_yticks(range(len(ys)), [f"{v:g}" for v in ys])
    a2.set_xlabel(kx)
    a2.set_ylabel(ky)
    for i, m in enumerate(methods):
        counts: dict[tuple[int, int], int] = {}
        for p in picks:
            st = p["setting"]
            if p["method"] == m and (cname is None or st[cname] == panel):
                key = (xs.index(st[kx]), ys.index(st[ky]))
                counts[key] = counts.get(key, 0) + 1
        dx = (i - (len(methods) - 1) / 2) * 0.09
        for (x, y), c in counts.items():
            a2.scatter(x + dx, y, s=12 + 10 * c, color=f"C{i}", edgecolor="w",
                       label=m if (x, y) == next(iter(counts)) else None)  # fmt: skip
    a2.legend(fontsize=6, loc="upper right")
    title = "true values and picks (size: how often)"
    a2.set_title(title if cname is None else f"{cname} = {panel}: {title}", fontsize=9)
