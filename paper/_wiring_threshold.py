"""The library of ``python -m paper.wiring_threshold`` (its design, phases and summary; the
driver, paper/wiring_threshold.py, states the design): kept apart so that other studies of
its family import this helper, never the study."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

from paper._study import study_main
from paper._wiring_confirm import FIT_ARGS, ConfirmDesign, _early_at
from paper._wiring_confirm import QUICK as CONFIRM_QUICK
from paper._wiring_logged import run_name

ROOT = Path(__file__).resolve().parents[1]


@dataclasses.dataclass
class ThresholdDesign(ConfirmDesign):
    """The design (see the module docstring): the confirmation's, at set 3, with every edge's
    threshold ``K`` and Hill coefficient ``n`` inside the range of Y's logged competence."""

    early: dict[str, Any] = dataclasses.field(default_factory=lambda: _early_at([3]))
    families: list[str] = dataclasses.field(default_factory=lambda: ["early"])
    K: float = 0.6
    n: float = 10.0
    hypothesis: str = (
        "with every edge's threshold inside the range of Y's logged training competence, "
        "the early family keeps the truth first or indistinguishable in every set, reads no "
        "wrong sign, and reads Y->Z's sign, and so >= 2 of the 3 signs, in most sets"
    )
    #: The stored design's field, frozen with it (run as ``python -m paper.wiring_threshold``).
    command: str = "python paper/wiring_threshold.py"
    figure = "wiring_threshold.png"

    def train_config(self, *job: Any) -> dict[str, Any]:
        """The confirmation's config of the run, with this design's ``K`` and ``n``."""
        c = super().train_config(*job)
        c["network"] = {**c["network"], "K": self.K, "n": self.n}
        return c


def two_signs_shares(summary: dict[str, Any]) -> dict[str, Any]:
    """Per family and se (``<family>_blocks``, ``<family>_pointwise``): the sets fitted, those
    reading two or more signs, their share and its 95 % Clopper-Pearson interval."""
    from scipy.stats import binomtest

    shares: dict[str, Any] = {}
    for se, fams in (("blocks", summary["by_family"]), ("pointwise", summary["pointwise"])):
        for fam, m in fams.items():
            m = m.get("logged", m)
            k, n = int(m["sets_with_two_signs"]), int(m["n_sets"])
            if n:
                ci = binomtest(k, n).proportion_ci(confidence_level=0.95, method="exact")
                shares[f"{fam}_{se}"] = {"sets": n, "two_signs": k, "share": k / n,
                                         "ci95": [float(ci.low), float(ci.high)]}  # fmt: skip
    return shares


#: Each type's partner that differs from it only in the sign of Y -> Z (activating first).
YZ_PARTNER = {"C1": "I1", "C2": "I2", "I1": "C1", "I2": "C2"}


def pointwise_loo(fit: Path) -> Any:
    """One saved fit's PSIS-LOO elpd per observation (before any K-fold refit), beside its
    data (``run``, ``agent``, ``step``; column ``elpd``); None when the fit kept no
    posterior or no log-likelihood."""
    import arviz as az
    import numpy as np
    import pandas as pd

    if not (fit / "posterior.nc").is_file():
        return None
    idata = az.from_netcdf(fit / "posterior.nc")
    if "log_likelihood" not in idata.groups():
        return None
    data = pd.read_parquet(fit / "data.parquet")
    seen = np.asarray(idata["observed_data"]["obs"], dtype=float)
    if seen.shape != (len(data),) or not np.allclose(seen, data["competence"] * data["n_eval"]):
        raise ValueError(f"{fit}: observations do not line up with data.parquet")
    loo = az.loo(idata, pointwise=True)
    return data[["run", "agent", "step"]].assign(elpd=np.asarray(loo.loo_i, dtype=float))


def misfit_by_block(out: Path, sets: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """Read after the runs: where the truth loses to the first type of each set (and to its
    Y -> Z partner, C1 <-> I1, C2 <-> I2): the elpd difference (truth minus the other) summed
    per agent and per run and agent, from both fits' pointwise PSIS-LOO; pairs whose fits kept
    no log-likelihood are left out. Kept beside each set's selection
    (``misfit_by_block.json``) and read from there where the posteriors are not (they are
    not committed)."""
    from simulate.common import write_json

    res: dict[str, Any] = {}
    for name, v in sets.items():
        fits = out / "wiring" / name / "fits"
        sel = json.loads((out / "wiring" / name / "selection.json").read_text())
        truth = v["true"]
        others = {"first": sel["best"], "partner": f"{YZ_PARTNER[truth[:2]]}{truth[2:]}"}
        kept = out / "wiring" / name / "misfit_by_block.json"
        if not (fits / truth / "posterior.nc").is_file():  # a checkout without posteriors
            if kept.is_file():
                res[name] = json.loads(kept.read_text())
            continue
        a = pointwise_loo(fits / truth)
        for role, other in others.items():
            b = None if a is None or other == truth else pointwise_loo(fits / other)
            if a is None or b is None:
                continue
            d = a.assign(elpd=a["elpd"] - b["elpd"].to_numpy())
            d["run"] = d["run"].str.removeprefix(f"{name.removesuffix('_early')}_")
            per_agent = d.groupby("agent")["elpd"].sum()
            per_block = d.groupby(["run", "agent"])["elpd"].sum()
            res.setdefault(name, {})[role] = {
                "other": other,
                "total": round(float(d["elpd"].sum()), 2),
                "by_agent": {k: round(float(x), 2) for k, x in per_agent.items()},
                "by_run_agent": {f"{r}/{g}": round(float(x), 2) for (r, g), x in per_block.items()},
            }
        if name in res:
            write_json(kept, res[name])
    return res


def _reach(c: dict[str, Any], z: int, level: float = 0.7) -> int:
    """First evaluated step at which agent ``z`` reached ``level`` (the last step if never)."""
    import numpy as np

    hit = np.flatnonzero(c["comp"][:, z] >= level)
    return int(c["steps"][hit[0]] if hit.size else c["steps"][-1])


def y_to_z_contrast(cfg: ThresholdDesign, runs: Path) -> dict[str, Any]:
    """Model-free, read after the runs: the Y -> Z sign's effect on Z in runs that share
    everything else (C1 against I1, C2 against I2: same seed, same edges out of X), per run
    with edges acting: Z's mean competence over the run and the first step at which Z reached
    0.7 (activating minus repressing), and whether X's and Y's curves are the same in both
    runs (then Z is the only agent the sign changed)."""
    import numpy as np

    from paper._study_runs import run_curves

    out: dict[str, Any] = {}
    for name, jobs in cfg.sets().items():
        act = name.split("_")[0]
        rep = YZ_PARTNER.get(act) if act in ("C1", "C2") else None
        if rep is None or name.replace(act, rep, 1) not in cfg.sets():  # no partner set
            continue
        for job in (j for j in jobs if j[2] != "w0"):  # w = 0: no designed edge acts
            a = run_curves(cfg.run_path(runs, job))
            b = run_curves(cfg.run_path(runs, (rep, *job[1:])))
            if a is None or b is None:
                continue
            z = a["roles"].index("Z")
            za, zb = a["comp"][:, z], b["comp"][:, z]
            same = np.array_equal(np.delete(a["comp"], z, 1), np.delete(b["comp"], z, 1))
            pooled = "_sets" in name  # a set of several seeds: each run's set in its key
            out[f"{act}-{rep}/{run_name(*job).split('_', 1 if pooled else 2)[-1]}"] = {
                "z_mean_act_minus_rep": round(float(za.mean() - zb.mean()), 4),
                "z_steps_to_0.7_act_minus_rep": _reach(a, z) - _reach(b, z),
                "x_and_y_identical": bool(same),
            }
    return out


def summary_phase(cfg: ThresholdDesign, runs: Path, out: Path) -> dict[str, Any]:
    """The confirmation's summary (:func:`wiring_confirm.summary_phase`) with
    ``two_signs_share`` (:func:`two_signs_shares`) and, read after the runs,
    ``misfit_by_block`` and ``y_to_z_contrast``."""
    from paper import _wiring_confirm as wiring_confirm
    from simulate.common import write_json

    summary = wiring_confirm.summary_phase(cfg, runs, out)
    summary["two_signs_share"] = two_signs_shares(summary)
    summary["misfit_by_block"] = misfit_by_block(out, summary["wiring_identification"]["sets"])
    summary["y_to_z_contrast"] = y_to_z_contrast(cfg, runs)
    write_json(out / "summary.json", summary)
    return summary


QUICK = {**CONFIRM_QUICK, "families": ["early"]}


def read_back_main(
    argv: list[str] | None,
    *,
    design: type,
    quick: dict[str, Any],
    name: str,
    description: str,
    summary: str = "paper._wiring_threshold:summary_phase",
) -> int:
    """The command line of a read-back on this design's phases (``restore``, ``wiring``,
    ``fit``, ``summary``: by default :func:`summary_phase`), with runs under
    ``runs/<name>`` and results under ``paper/results/<name>`` by default."""
    return study_main(
        argv,
        description=description,
        design=design,
        quick=quick,
        run_name=run_name,
        phases=["restore", "wiring", "fit", "summary"],
        gated=None,
        default_runs=f"runs/{name}",
        default_out=f"paper/results/{name}",
        steps={
            "restore": "paper._study_runs:restore_phase",
            "fit": "paper._wiring_logged:fit_phase",
            "summary": summary,
        },
    )


# -- the pipeline gates (python -m paper.wiring_gates) -------------------------------------
GATES_ARGS = [a if a != "logged" else "logged-gates" for a in FIT_ARGS]


@dataclasses.dataclass
class GatesDesign(ThresholdDesign):
    """The design (see the module docstring)."""

    early: dict[str, Any] = dataclasses.field(default_factory=lambda: _early_at([4, 5]))
    fit_args: list[str] = dataclasses.field(default_factory=lambda: list(GATES_ARGS))
    hypothesis: str = (
        "with the pipeline gates on the logged training competence, the truth is first or "
        "indistinguishable in every set and no identified sign is wrong; whether >= 2 of the "
        "3 signs are identified in most sets is open"
    )
    #: The stored design's field, frozen with it (run as ``python -m paper.wiring_gates``).
    command: str = "python paper/wiring_gates.py"
    figure = "wiring_gates.png"


GATES_QUICK = {**QUICK, "fit_args": [a if a != "logged" else "logged-gates"
                                         for a in QUICK["fit_args"]]}  # fmt: skip


# -- the greedy readout (python -m paper.wiring_readout) ----------------------------------
READOUT_ARGS = [*GATES_ARGS, "--readout", "greedy"]


@dataclasses.dataclass
class ReadoutDesign(GatesDesign):
    """The design (see the module docstring)."""

    early: dict[str, Any] = dataclasses.field(default_factory=lambda: _early_at([6, 7]))
    fit_args: list[str] = dataclasses.field(default_factory=lambda: list(READOUT_ARGS))
    hypothesis: str = (
        "with a greedy readout of a latent skill, the truth is first or indistinguishable in "
        "every set and no identified sign is wrong; X -> Y is identified in most sets; "
        "whether >= 2 of the 3 signs are identified in most sets is open"
    )
    #: The stored design's field, frozen with it (run as ``python -m paper.wiring_readout``).
    command: str = "python paper/wiring_readout.py"
    figure = "wiring_readout.png"


READOUT_QUICK = {**GATES_QUICK, "fit_args": [*GATES_QUICK["fit_args"], "--readout", "greedy"]}
