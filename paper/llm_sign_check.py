"""Do calibrate's fitted edge signs agree with the wiring of real llm_runs logs?

Trains C1-wired and I1-wired joint runs on ``math`` that differ only in the sign of the
Y -> Z edge (simulate's presets: C1 = X->Y +, X->Z +, Y->Z +; I1 the same with Y->Z -), with
the same task, seeds, base, mechanisms and learning rates, then fits calibrate's
competence kinetics to each run set and compares candidate motifs by PSIS-LOO::

    python -m paper.llm_sign_check                         # 2 seeds x {C1, I1}, C1 vs I1 fits
    python -m paper.llm_sign_check --candidates auto       # + all 16 FFL presets (slow)
    python -m paper.llm_sign_check --fit-only              # reuse the finished runs
    python -m paper.llm_sign_check --quick --out /tmp/sc   # micro model, a few steps (tests)

Run folders that already hold a finished log are reused, unfinished ones are resumed from
their checkpoint, so the script can be interrupted and re-run. Output (``--out``, default
``runs/llm_sign_check``): ``runs/<motif>-s<seed>/`` (run folders), ``fits/<set>/``
(selection.json per run set), ``sign_check.json`` (the table below) and a printed table:
run set, top-ranked motif, elpd of C1 minus I1 with the se of that difference, and the
sign of each edge in the top-ranked model plus its LOO (pseudo-BMA) probability of being
activating.

Why these settings (the defaults of ``TrainConfig`` barely constrain signs: X and Y are
competent within a few evaluations, and Z hardly moves): C1 and I1 differ only in the sign
of Y -> Z, so Y -> Z is made the switch: a sharp Hill (K 0.66, n 30) on Y's EMA training
competence acting on Z's learning rate with weight 1 (lr x G: Z nearly frozen when the edge
is off). Y learns 50x slower than the default (``rl.lr_scale``) so that it crosses the
switch during the run (around step 100), X 2x faster (X -> Z is on early in both wirings)
and Z 4x faster so its curve can move while the edge is on. 200 probe items per role keep
binomial noise near 0.035. See ``DESIGN`` and the measured outcome in the report
(results differ between design iterations; they are not tuned to agree).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

import simulate

MOTIFS = ("C1", "I1")
EDGES = ("X->Y", "X->Z", "Y->Z")
# the knobs that make the wiring visible (see the module docstring)
DESIGN = {"K_yz": 0.66, "n_yz": 30.0, "x_scale": 2.0, "y_scale": 0.02, "z_scale": 4.0}


def run_config(
    motif: str, seed: int, *, steps: int, quick: bool = False, base_cache: str | None = None
) -> dict[str, Any]:
    """TrainConfig dict of one run: the wiring ``motif`` (C1 or I1) and ``seed``.

    C1 and I1 share every edge sign but one: Y -> Z activates in C1 and represses in I1
    (simulate's presets: X->Y +, X->Z +, Y->Z +/-). Y -> Z is therefore the switch, with the
    Hill shape and per-role learning-rate scales of ``DESIGN`` (see the module docstring).
    """
    from simulate.spec import ffl_spec

    signs = {e.key: int(e.sign) for e in ffl_spec(motif, "AND").edges}
    shape = {"X->Y": (0.5, 4.0), "X->Z": (0.5, 4.0), "Y->Z": (DESIGN["K_yz"], DESIGN["n_yz"])}
    spec = {
        "name": f"{motif}-AND",
        "nodes": ["X", "Y", "Z"],
        "edges": [
            {
                "source": k[0],
                "target": k[-1],
                "sign": signs[k],
                "K": shape[k][0],
                "n": shape[k][1],
                "feedback": False,
            }
            for k in EDGES
        ],
        "gates": {"Z": "AND"},
        "inputs": ["X"],
    }
    cfg: dict[str, Any] = {
        "task": {"name": "math", "n_probe": 200, "n_test": 32},
        "network": {
            "spec": spec,
            "edges": {
                "X->Y": {"mechanism": "coupling", "weight": 0.3},
                "X->Z": {"mechanism": "coupling", "weight": 1.0},
                "Y->Z": {"mechanism": "coupling", "weight": 1.0},
            },
        },
        "rl": {
            "lr": 1e-3,
            "lr_scale": {"X": DESIGN["x_scale"], "Y": DESIGN["y_scale"], "Z": DESIGN["z_scale"]},
        },
        "steps": steps,
        "eval_every": 20,
        "ckpt_every": 50,
        "seed": seed,
        "threads": 1,
        "name": f"{motif}-s{seed}",
    }
    if quick:
        cfg["model"] = {"preset": "micro", "pretrain_steps": 30, "pretrain_batch": 32}
        cfg["task"].update(n_probe=16, n_test=8)
        cfg["rl"].update(batch=8)
        cfg["eval_every"] = max(1, steps // 6)
        cfg["ckpt_every"] = 0
    if base_cache is not None:
        cfg.setdefault("model", {})["base_cache"] = base_cache
    return cfg


def train_runs(
    out: Path, seeds: list[int], *, steps: int, quick: bool, base_cache: str | None, log=print
) -> dict[str, list[Path]]:
    """Train (or keep / resume) every run on the study loop, one at a time; returns motif ->
    run folders."""
    from calibrate import train_runs as train_all
    from simulate.common import write_json

    folders: dict[str, list[Path]] = {m: [] for m in MOTIFS}
    jobs = []
    for seed in seeds:
        for motif in MOTIFS[::-1]:
            folder = (out / "runs" / f"{motif}-s{seed}").resolve()
            folders[motif].append(folder)
            conf = run_config(motif, seed, steps=steps, quick=quick, base_cache=base_cache)
            path = write_json(out / "configs" / f"{folder.name}.json", conf)
            jobs.append((folder, ["--config", str(path.resolve()), "--no-progress"]))
    train_all(jobs, workers=1, logs=out / "logs", desc="train", echo=log)
    return folders


def _edge_signs(motif: str) -> dict[str, int]:
    from simulate.spec import ffl_spec

    return {e.key: int(e.sign) for e in ffl_spec(motif, "AND").edges}


def fit_set(
    name: str,
    folders: list[Path],
    cands: list[str],
    out: Path,
    *,
    fit_config: dict[str, Any] | None,
    seed: int = 0,
    log=print,
) -> dict[str, Any]:
    """Fit the candidates (AND gate) to one run set; C1 vs I1 difference and edge signs."""
    import jax
    import numpy as np

    jax.config.update("jax_enable_x64", True)
    from calibrate import FitConfig, candidates, load_inputs, select

    data = load_inputs([str(f) for f in folders])
    cfg = FitConfig.from_dict({"method": "laplace", **(fit_config or {})})
    sel = select(
        data,
        candidates(cands, ["AND"]),
        cfg,
        key=jax.random.key(seed),
        log=lambda s: log(f"  [{name}] {s}"),
    )
    sel.save(out / name, figure=False)
    rank = sel.ranking
    # C1 minus I1, with the se of the pointwise difference
    ll = {m: np.asarray(_pointwise_loo(sel.posteriors[f"{m}-AND"])) for m in MOTIFS}
    diff = ll["C1"] - ll["I1"]
    d_c1_i1 = float(diff.sum())
    se_diff = float(np.sqrt(len(diff)) * diff.std(ddof=1))
    elpd = np.array([r["elpd_loo"] for r in rank])
    w = np.exp(elpd - elpd.max())
    w /= w.sum()
    p_act = {}
    for e in EDGES:
        p_act[e] = float(
            sum(wi for wi, r in zip(w, rank, strict=True) if _edge_signs(r["motif"])[e] > 0)
        )
    top = rank[0]["motif"]
    return {
        "set": name,
        "runs": [str(f) for f in folders],
        "candidates": cands,
        "top": f"{top}-AND",
        "top_signs": _edge_signs(top),
        "elpd": {f"{r['motif']}-AND": r["elpd_loo"] for r in rank},
        "elpd_C1_minus_I1": d_c1_i1,
        "se_C1_minus_I1": se_diff,
        "p_activating": p_act,
        "ranking": rank,
    }


def _pointwise_loo(post: Any) -> Any:
    import warnings

    import numpy as np

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        import arviz as az

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        loo = az.loo(post.to_inference_data(), pointwise=True)
    return np.asarray(loo.loo_i).ravel()


def table(rows: list[dict[str, Any]]) -> str:
    """The printed result table."""
    sgn = {1: "+", -1: "-"}
    head = (
        f"{'run set':<10}{'top motif':<11}{'elpd C1-I1':>11}{'se':>7}   "
        + "  ".join(f"{e:>12}" for e in EDGES)
        + "   agrees"
    )
    lines = [head, "-" * len(head)]
    for r in rows:
        wired = _edge_signs(r["set"].split("-")[0]) if r["set"][:2] in MOTIFS else None
        cells = []
        for e in EDGES:
            cells.append(f"{sgn[r['top_signs'][e]]} (P+={r['p_activating'][e]:.2f})")
        agree = "-"
        if wired is not None:
            agree = (
                "yes"
                if all((r["p_activating"][e] > 0.5) == (wired[e] > 0) for e in EDGES)
                else "no"
            )
        lines.append(
            f"{r['set']:<10}{r['top']:<11}{r['elpd_C1_minus_I1']:>11.1f}"
            f"{r['se_C1_minus_I1']:>7.1f}   " + "  ".join(f"{c:>12}" for c in cells) + f"   {agree}"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Train, fit, print the table; exit 0 (also when signs disagree: it is a report)."""
    ap = simulate.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--out", default="runs/llm_sign_check")
    ap.add_argument("--seeds", default="0,1")
    ap.add_argument("--steps", type=int, default=450)
    ap.add_argument(
        "--candidates",
        default="C1,I1",
        help="motifs compared (AND gate): a comma list or 'auto' (all 8)",
    )
    ap.add_argument("--per-seed", action="store_true", help="also fit each seed's runs separately")
    ap.add_argument("--fit-config", default=None, help="JSON FitConfig overrides")
    ap.add_argument("--train-only", action="store_true")
    ap.add_argument("--fit-only", action="store_true")
    ap.add_argument("--quick", action="store_true", help="micro model, few steps (tests)")
    ap.add_argument("--base-cache", default=None)
    args = ap.parse_args(argv)
    out = Path(args.out)
    seeds = [int(s) for s in args.seeds.split(",")]
    steps = 12 if args.quick and args.steps == 450 else args.steps
    if args.fit_only:
        folders = {m: [out / "runs" / f"{m}-s{s}" for s in seeds] for m in MOTIFS}
    else:
        folders = train_runs(out, seeds, steps=steps, quick=args.quick, base_cache=args.base_cache)
    from llm_runs import competence_figure

    order = [f for pair in zip(folders["C1"], folders["I1"], strict=True) for f in pair]
    png = competence_figure(
        order, out / "curves.png", title="Only the sign of Y->Z differs (C1: +, I1: -)"
    )
    print(f"curves: {png}")
    if args.train_only:
        return 0
    cands = list(simulate.MOTIFS) if args.candidates == "auto" else args.candidates.split(",")
    for m in MOTIFS:
        if m not in cands:
            cands.append(m)
    fit_config = json.loads(args.fit_config) if args.fit_config else None
    if args.quick and fit_config is None:
        fit_config = {"map_starts": 1, "map_steps": 30, "samples": 200}
    sets = {f"{m}-all": folders[m] for m in MOTIFS}
    if args.per_seed:
        for m in MOTIFS:
            for s, f in zip(seeds, folders[m], strict=True):
                sets[f"{m}-s{s}"] = [f]
    rows = []
    for name, fs in sets.items():
        t0 = time.perf_counter()
        rows.append(fit_set(name, fs, cands, out / "fits", fit_config=fit_config))
        print(f"fitted {name} ({len(cands)} candidates) in {time.perf_counter() - t0:.0f} s")
    (out / "sign_check.json").write_text(json.dumps(rows, indent=2) + "\n")
    print(table(rows))
    print(f"written {out / 'sign_check.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
