"""Pilot rounds on the study loop: each round's design stored before its runs, then trained.

:func:`run_pilot_rounds` runs a :class:`~calibrate._pilots._design.PilotPlan` inside an open
:class:`calibrate.Study`: round 0's settings, then for each later round a fit of every
pilot so far (``OUT/fit_r<k>``, ``calibrate fit`` in a child process) and the settings it is
least sure of. Every round's design (``OUT/round_<k>.json``: its settings, seeds, run
folders and, from round 1, the forecast entropy that chose them) is stored once with its
time and revision (:func:`calibrate.store_once`) before any of its runs starts, so a rerun
keeps the rounds already chosen and resumes their runs.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from simulate.common import read_json_object

from .._study import StageError, Study, store_once
from ._design import (
    PilotPlan,
    entropy,
    initial_settings,
    pick_uncertain,
    setting_name,
)

__all__ = ["PilotRun", "label_runs", "pilot_runs", "run_pilot_rounds", "train_args_for"]

#: One pilot run: its round, setting, seed and folder.
PilotRun = dict[str, Any]


def _short(setting: dict[str, Any]) -> dict[str, Any]:
    """A setting with its floats at 3 significant digits (what a person would type)."""
    return {k: float(f"{v:.3g}") if isinstance(v, float) else v for k, v in setting.items()}


def _runs_of(folder: Path, r: int, settings: Sequence[dict[str, Any]], plan: PilotPlan):
    settings = [_short(s) for s in settings]
    return [
        {"round": r, "setting": dict(s), "seed": seed,
         "folder": str(folder / f"r{r}_{setting_name(s)}_s{seed}")}
        for s in settings for seed in plan.seeds
    ]  # fmt: skip


def pilot_runs(out: str | Path) -> list[PilotRun]:
    """Every pilot run of the rounds stored in ``out`` (``round_<k>.json``), in order."""
    runs: list[PilotRun] = []
    r = 0
    while (Path(out) / f"round_{r}.json").is_file():
        runs += read_json_object(Path(out) / f"round_{r}.json", what="pilot round")["runs"]
        r += 1
    return runs


def run_pilot_rounds(
    study: Study,
    plan: PilotPlan,
    out: str | Path,
    *,
    train_args: Callable[[dict[str, Any], int], list[str]],
    fit_args: Sequence[str],
    echo: Callable[[str], None] | None = None,
) -> list[PilotRun]:
    """Run (or continue) every round of ``plan`` into ``out``.

    Args:
        study: The open study whose workers, logs and progress train the runs.
        plan: The pilot design.
        out: Folder of the rounds' designs, runs and fits.
        train_args: ``llm_runs train`` arguments of a new pilot run at (setting, seed),
            besides ``--out``.
        fit_args: ``calibrate fit`` arguments of a round's fit (motif, gate, hierarchy,
            method), besides the inputs and ``--out``.
        echo: One line per round (None: the study's echo).

    Returns:
        Every pilot run, round by round.

    Raises:
        StageError: A training run or a fit failed.
    """
    from .. import load_fit
    from .._predict._rule import observed_regime_probs

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    say = echo or study.echo
    runs: list[PilotRun] = []
    for r in range(plan.rounds):

        def make(r: int = r, runs: list[PilotRun] = runs) -> dict[str, Any]:
            if r == 0:
                settings = initial_settings(plan.space, plan.initial)
                return {"round": 0, "rule": "maximin Latin hypercube over the box",
                        "runs": _runs_of(out, 0, settings, plan)}  # fmt: skip
            fit_dir = out / f"fit_r{r}"
            study.fit([x["folder"] for x in runs], fit_dir, args=list(fit_args))
            post = load_fit(fit_dir)
            cands = plan.space.candidates()[: plan.candidates]
            import jax

            probs = observed_regime_probs(
                post, cands, steps=plan.pilot_steps, every=plan.eval_every,
                max_draws=plan.draws, extrapolation_sd=plan.extrapolation_sd,
                key=jax.random.key(plan.space.seed + r),
            )  # fmt: skip
            h = entropy(probs)
            seen = [x["setting"] for x in runs]
            picks = pick_uncertain(plan.space, cands, h, seen, plan.round_size, plan.min_distance)
            chosen = [cands[i] for i in picks]
            return {
                "round": r,
                "rule": "largest entropy of P(regime group) among the box's candidates, "
                f"at least {plan.min_distance:g} apart (unit coordinates)",
                "fit": str(fit_dir),
                "chosen": [
                    {
                        "setting": cands[i],
                        "entropy": float(h[i]),
                        **{f"p_{g}": float(v[i]) for g, v in probs.items()},
                    }
                    for i in picks
                ],
                "max_entropy": float(np.max(h)),
                "runs": _runs_of(out, r, chosen, plan),
            }

        doc = store_once(out / f"round_{r}.json", make)
        new = doc["runs"]
        study.train(
            [(Path(x["folder"]), train_args(x["setting"], int(x["seed"]))) for x in new],
            desc=f"pilot round {r}", steps=plan.pilot_steps,
        )  # fmt: skip
        for x in new:
            if not (Path(x["folder"]) / "manifest.json").is_file():
                raise StageError(f"pilot {x['folder']} left no run")
        runs += new
        names = ", ".join(sorted({setting_name(x["setting"]) for x in new}))
        say(f"  round {r}: {len(new)} runs ({names})")
    return runs


def label_runs(runs: Sequence[PilotRun]) -> list[PilotRun]:
    """Each run with its observed regime by the package's rule (``regime``, ``group``,
    ``collapse``: :func:`llm_runs.observed_regime`) and by the rule that ignores falls from
    the starting level (``collapse_peak``: :func:`simulate.common.peak_collapse` on any
    agent, or a diverged run)."""
    from llm_runs import observed_regime
    from llm_runs.runlog import read_run
    from simulate.common import peak_collapse, regime_group

    out = []
    for x in runs:
        log = read_run(x["folder"])
        reg = observed_regime(log)
        comp = log.competence()
        peak = bool(reg.get("diverged")) or any(
            peak_collapse(comp[a].dropna().to_numpy(float))
            for a in comp.columns
            if comp[a].dropna().size >= 4
        )
        group = regime_group(reg["regime"])
        final = {str(a): float(comp[a].dropna().iloc[-1]) for a in comp.columns}
        out.append(x | {"regime": reg["regime"], "group": group, "final": final,
                        "collapse": group == "collapse", "collapse_peak": peak})  # fmt: skip
    return out


def train_args_for(
    motif: str, gate: str, task: str, preset: str, steps: int, every: int, sets: list[str]
):
    """A function (setting, seed) -> ``llm_runs train`` arguments of one pilot."""

    def args(setting: dict[str, Any], seed: int) -> list[str]:
        out = ["--motif", motif, "--gate", gate, "--task", task, "--preset", preset,
               "--steps", str(steps), "--eval-every", str(every), "--seed", str(seed),
               "--threads", "1"]  # fmt: skip
        for s in sets:
            out += ["--set", s]
        for k, v in setting.items():
            out += ["--set", f"{k}={v!r}"]
        return out

    return args
