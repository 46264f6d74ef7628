"""The toy testbed of ``python -m paper.archive.wiring_pipeline --quick``: one C2 wiring
set of synthetic run logs (the calibrate model with pipeline gates X->Y, Y->Z, growth rates
proportional to ``rl.lr``), written as llm_runs run folders, and its fit without the gate,
at reduced fit sizes (for tests; no training, no committed result read)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

#: The toy set: C2 (X -| Y), three learning rates, 11 evaluations of 64 probes.
QUICK_DESIGN = {"wiring_types": ["C2"], "wiring_sets": [0], "wiring_lrs": [5e-4, 1e-3, 2e-3],
                "steps": 100, "eval_every": 10, "n_probe": 64}  # fmt: skip
#: Growth rates at rl.lr 1e-3 (1/step), scaled by rl.lr / 1e-3 in each run.
TRUTH = {"rho[X]": 0.05, "rho[Y]": 0.1, "rho[Z]": 0.1, "delta": 0.002, "b": 0.15, "A0": 0.05,
         "K": 0.4, "n": 3.0, "Kp[X->Y]": 0.4, "m[X->Y]": 3.0, "Kp[Y->Z]": 0.4,
         "m[Y->Z]": 3.0}  # fmt: skip
#: Reduced fit sizes (``calibrate fit --config``).
QUICK_FIT = {"chains": 1, "samples": 100, "map_starts": 1, "map_steps": 100, "dt": 5.0}


def _write_run(folder: Path, table, lr: float, seed: int, n_probe: int, steps: int) -> None:
    """One run folder (manifest, competence rows, end-to-end accuracy = A_Z) from the
    synthetic rows of one run, marked finished."""
    from llm_runs.runlog import RunWriter, make_manifest, update_manifest
    from simulate.spec import ffl_spec

    manifest = make_manifest(
        run=folder.name, seed=seed, agents=["X", "Y", "Z"],
        spec=ffl_spec("C2", "AND").to_dict(),
        config={"steps": steps, "eval_every": 10, "rl": {"lr": lr},
                "task": {"name": "math", "n_probe": n_probe}},
    )  # fmt: skip
    with RunWriter(folder, manifest) as w:
        for step, g in table.groupby("step", sort=True):
            rows = [{"kind": "agent", "step": int(step), "agent": str(r.agent),
                     "competence": float(r.competence), "n_eval": int(r.n_eval)}
                    for r in g.itertuples()]  # fmt: skip
            z = float(g[g.agent == "Z"].competence.iloc[0])
            rows.append({"kind": "e2e", "step": int(step), "accuracy": z, "n_eval": n_probe})
            w.write(rows)
    update_manifest(folder, status="finished")


def quick_testbed(folder: Path) -> tuple[Path, tuple[str, ...]]:
    """Make (once) the toy testbed under ``folder`` (``config.json``, ``runs/``, and its fits
    without the gate in ``wiring/``); returns the folder and the ``calibrate fit`` options
    of the reduced fit sizes."""
    import jax
    import numpy as np

    import calibrate as cal
    from paper._testbed_analysis import fit_wiring
    from paper._testbed_design import StudyConfig, run_name
    from simulate.common import write_json

    cfg = StudyConfig(**QUICK_DESIGN)
    cfg.bind(folder)
    write_json(folder / "config.json", dataclasses.asdict(cfg))
    extra = ("--config", str(write_json(folder / "quick_fit.json", QUICK_FIT)))
    runs = folder / "runs"
    jobs = cfg.jobs("wiring")
    if not all((runs / run_name(*j) / "manifest.json").is_file() for j in jobs):
        lrs = [j[5] for j in jobs]
        data = cal.synthetic_curves(
            "C2-AND", TRUTH, key=jax.random.key(3), runs=len(jobs), n_eval=cfg.n_probe,
            steps=np.arange(0, cfg.steps + 1, cfg.eval_every), pipeline="X->Y,Y->Z",
            run_params=[{f"rho[{n}]": TRUTH[f"rho[{n}]"] * lr / 1e-3 for n in "XYZ"}
                        for lr in lrs],
        )  # fmt: skip
        for r, job in enumerate(jobs):
            t = data.table[data.table.run == f"r{r}"]
            _write_run(runs / run_name(*job), t, job[5], job[6], cfg.n_probe, cfg.steps)
    fit_wiring(cfg, runs, folder, extra=extra, logs=folder / "logs")
    return folder, extra
