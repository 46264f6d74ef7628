"""How many seeds per condition would read Y -> Z's sign with a Student-t band (issue 71 §5).

Instead of a thirteenth design, a power calculation from the fitted read-backs of the
replicated designs (``paper/results/wiring_replicates/`` and ``wiring_replicates_rep/``: each
condition at two seeds, the se of an elpd difference stratified by condition and agent,
``calibrate fit --dse-replicates``). Nothing is trained or fitted: it reads the committed
``selection.json`` of each set.

The sign of Y -> Z is read when every candidate type with the other sign of Y -> Z lies
outside the truth's band. For each set the binding candidate is the one of the other Y -> Z
sign with the smallest ``d / se`` (``d_elpd`` over ``dse``); its power is an upper bound on
the power to read the sign. With ``r`` seeds per condition (the analysis unchanged):

- the elpd difference is a sum over runs: its expectation grows as ``r`` (``d_r = r d_2 / 2``);
- its stratified se as ``sqrt(r)`` (``se_r = se_2 sqrt(r / 2)``), so the t-ratio's
  noncentrality is ``sqrt(r / 2) d_2 / se_2``;
- its Satterthwaite degrees of freedom as ``r - 1`` (``df_r = df_2 (r - 1)``: every stratum
  variance gains ``r - 1`` degrees of freedom).

The sign is read when ``d > t_{1 - alpha}(df_r) se`` (one-sided ``alpha`` = 5 %). Taking the
ratio as a noncentral t (exact when the strata share one variance; Satterthwaite otherwise),
the power is ``P(T > t_{1 - alpha}(df_r))``, ``T ~ t(df_r, ncp)``. The plug-in effect sizes
come from fits whose se rests on 1-3 degrees of freedom themselves: the seeds needed are an
order of magnitude, not a plan. Pooled per type: the two replications of C1 and of I1 as one
estimate per two seeds (the mean of their differences, variances and degrees of freedom).

Cost: ``3 r`` runs a set (three conditions), ``12 r`` for the four types; the replicated
designs trained a 6-run set in about 7 minutes and fitted it in about 19 (two sets at a time on
two cores; docs/results.md).

Results: ``paper/results/wiring_power/`` summary.json and table.md.

Usage: python -m paper.wiring_power [--out paper/results/wiring_power]
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import simulate
from simulate.common import write_json, write_text
from simulate.spec import FFL_SIGNS

ROOT = Path(__file__).resolve().parents[1]

COMMAND = "python -m paper.wiring_power"
STUDIES = ("wiring_replicates", "wiring_replicates_rep")
#: One-sided level of the band and the powers reported.
ALPHA = 0.05
POWERS = (0.5, 0.8)
#: Seeds per condition in the replicated designs, and the most this calculation tries.
SEEDS_NOW = 2
MAX_SEEDS = 400
#: Conditions per set (w = 0, w = 0.9, w = 0.9 with X knocked down) and types.
CONDITIONS, TYPES = 3, 4


def sign_power(ratio: float, df: float, seeds: int, *, alpha: float = ALPHA) -> float:
    """Power to exclude a candidate by a one-sided ``1 - alpha`` Student-t band at ``seeds``
    seeds per condition, from its ``d / se`` ``ratio`` and degrees of freedom ``df`` at
    :data:`SEEDS_NOW` seeds (the scaling of the module docstring).

    Args:
        ratio: ``d_elpd / dse`` at two seeds per condition.
        df: Satterthwaite degrees of freedom of that se at two seeds.
        seeds: Seeds per condition (>= 2).
        alpha: One-sided level.

    Returns:
        ``P(T > t_{1 - alpha}(df_r))`` for ``T`` noncentral t.
    """
    from scipy import stats

    if seeds < 2 or df <= 0:
        raise ValueError(f"seeds must be >= 2 and df > 0, got {seeds}, {df}")
    df_r = df * (seeds - 1) / (SEEDS_NOW - 1)
    ncp = math.sqrt(seeds / SEEDS_NOW) * ratio
    return float(stats.nct.sf(stats.t.ppf(1 - alpha, df_r), df_r, ncp))


def seeds_for_sign(
    ratio: float, df: float, power: float, *, alpha: float = ALPHA, max_seeds: int = MAX_SEEDS
) -> int | None:
    """The fewest seeds per condition (>= 2) whose :func:`sign_power` reaches ``power``, or
    None when not within ``max_seeds``."""
    for r in range(SEEDS_NOW, max_seeds + 1):
        if sign_power(ratio, df, r, alpha=alpha) >= power:
            return r
    return None


def yz_sign(label: str) -> int:
    """The sign of Y -> Z in the FFL type of ``label`` (``C1-AND`` -> +1)."""
    return FFL_SIGNS[label.split("-")[0]][2]


def binding(selection: dict[str, Any], truth: str) -> dict[str, Any]:
    """The candidate of the other Y -> Z sign with the smallest ``d / se``, with its ``d``,
    ``se`` and degrees of freedom."""
    rows = [r for r in selection["ranking"] if yz_sign(r["label"]) != yz_sign(truth)]
    r = min(rows, key=lambda x: x["d_elpd"] / x["dse"])
    return {"other": r["label"], "d": r["d_elpd"], "se": r["dse"], "df": r["dse_df"]}


def _row(name: str, d: float, se: float, df: float, **extra: Any) -> dict[str, Any]:
    ratio = d / se
    row: dict[str, Any] = {"name": name, **extra, "d": round(d, 2), "se": round(se, 2),
                           "df": round(df, 2), "ratio": round(ratio, 2),
                           "power_now": round(sign_power(ratio, df, SEEDS_NOW), 3)}  # fmt: skip
    for p in POWERS:
        r = seeds_for_sign(ratio, df, p)
        row[f"seeds_power{int(p * 100)}"] = r
        row[f"runs_per_set_power{int(p * 100)}"] = None if r is None else CONDITIONS * r
    return row


def analyse(results: Path) -> dict[str, Any]:
    """Per set and pooled per type: the binding candidate and the seeds it needs."""
    sets, by_type = [], {}
    for study in STUDIES:
        cfg = json.loads((results / study / "summary.json").read_text())
        for name, v in cfg["wiring_identification"]["sets"].items():
            sel = json.loads((results / study / "wiring" / name / "selection.json").read_text())
            b = binding(sel, v["true"])
            sets.append(_row(name, b["d"], b["se"], b["df"], study=study, truth=v["true"],
                             other=b["other"]))  # fmt: skip
            by_type.setdefault(v["true"], []).append(b)
    pooled = []
    for truth, bs in by_type.items():
        n = len(bs)  # per two seeds: the mean difference, variance and degrees of freedom
        d = sum(b["d"] for b in bs) / n
        se = math.sqrt(sum(b["se"] ** 2 for b in bs) / n)
        df = sum(b["df"] for b in bs) / n
        pooled.append(_row(f"{truth} ({n} set{'s' * (n > 1)})", d, se, df, truth=truth))
    need = {row["truth"]: row["seeds_power80"] for row in pooled}
    known = [r for r in need.values() if r is not None]
    cost = {
        "seeds_per_type": need,
        "runs_per_type_seeds": None if len(known) < len(need) else
        sum(CONDITIONS * r for r in known),
        "runs_common_seeds": None if len(known) < len(need) else
        CONDITIONS * TYPES * max(known),
        "runs_now": CONDITIONS * TYPES * SEEDS_NOW,
    }  # fmt: skip
    return {
        "command": COMMAND, "alpha_one_sided": ALPHA, "seeds_now": SEEDS_NOW,
        "cost_power80": cost,
        "conditions_per_set": CONDITIONS, "types": TYPES, "max_seeds": MAX_SEEDS,
        "sets": sets, "pooled_by_type": pooled,
    }  # fmt: skip


def table(s: dict[str, Any]) -> str:
    """Markdown of :func:`analyse`'s result."""
    head = ("| set | truth | binding other type | d (nats) | se | df | d / se | power at 2 "
            "seeds | seeds for 50 % / 80 % | runs a set for 80 % |")  # fmt: skip
    lines = [
        f"Seeds per condition to read Y -> Z's sign with a one-sided {1 - s['alpha_one_sided']:.0%}"
        " Student-t band, from the replicated read-backs (`python -m paper.wiring_power`).",
        "",
        head,
        "|---" * 10 + "|",
    ]

    def fmt(r: int | None) -> str:
        return f"> {s['max_seeds']}" if r is None else str(r)

    c = s["cost_power80"]
    tail = [
        "",
        f"80 % power in every type (pooled rows): {c['runs_per_type_seeds']} runs with each "
        f"type at its own seeds, {c['runs_common_seeds']} at one seed count for all four "
        f"({c['runs_now']} runs at two seeds now).",
    ]
    for row in s["sets"] + s["pooled_by_type"]:
        lines.append(
            f"| {row['name']} | {row['truth']} | {row.get('other', 'pooled')} | {row['d']} | "
            f"{row['se']} | {row['df']} | {row['ratio']} | {row['power_now']} | "
            f"{fmt(row['seeds_power50'])} / {fmt(row['seeds_power80'])} | "
            f"{fmt(row['runs_per_set_power80'])} |"
        )
    return "\n".join(lines + tail) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = simulate.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--results", default=str(ROOT / "paper" / "results"))
    ap.add_argument("--out", default=str(ROOT / "paper" / "results" / "wiring_power"))
    a = ap.parse_args(argv)
    out = simulate.claim_folder(a.out, command=COMMAND, overwrite=True)
    s = analyse(Path(a.results))
    out.mkdir(parents=True, exist_ok=True)
    write_json(out / "summary.json", s)
    write_text(out / "table.md", table(s))
    simulate.mark_output(out, COMMAND, ["summary.json", "table.md"], made=True)
    print(table(s), end="")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
