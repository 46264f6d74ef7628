"""The hypotheses study's macros of ``tex_numbers.py``: design, the stored predictions and
(when the study's summary exists) the measured outcome, per task and per motif."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from paper.figures._tex_common import MOTIFS, PENDING, Macros, dig, fmt, fmt_ci, letters, read_json
from paper.figures._tex_numbers_pool import and_list

HYPOTHESES = {"c1_filters_spurious": "HypOne", "i1_adapts_faster": "HypTwo"}
TASKS = ("math", "rag")


def _signed(x: Any, digits: int = 3) -> str:
    return PENDING if fmt(x) == PENDING else f"{float(x):+.{digits}f}"


def _band(b: Any, digits: int = 3, key: str = "ci95") -> str:
    """``mean [lo, hi]`` of a ``{"mean", key}`` band; "pending" when absent."""
    mean, ci = fmt(dig(b, "mean"), digits), fmt_ci(dig(b, key), digits)
    return PENDING if PENDING in (mean, ci) else f"{mean} {ci}"


def hypotheses(m: Macros, results: Path) -> None:
    """Design, stored predictions and outcome; "not yet tested" until the summary exists."""
    root = results / "hypotheses_old_testbed"
    cfg, pred = read_json(root / "config.json"), read_json(root / "predictions.json")
    s = read_json(root / "summary.json")
    m.add("HypTested", "tested" if s is not None else "not yet tested")
    m.add(
        "HypStatusSentence",
        "Both hypotheses were tested on real runs after their predictions were stored; "
        "the outcomes below are read from the study's summary."
        if s is not None
        else "Neither hypothesis has been tested yet: the study's summary does not exist, so "
        "this section states the hypotheses and their pre-stated tests only. Their outcome "
        "will replace this sentence when it does.",
    )
    _design(m, cfg)
    created, first = dig(pred, "created"), dig(s, "first_run_created")
    m.add("HypPredCreated", PENDING if created is None else created.replace("+00:00", " UTC"))
    if created is None:
        first_text = "no prediction stored yet"
    elif first is None:
        first_text = "before any test run"
    else:
        before = created < first
        first_text = ("before" if before else "NOT before") + (
            f" the first test run, which started at {first.replace('+00:00', ' UTC')}"
        )
    m.add("HypPredictedFirst", first_text)
    for key, tag in HYPOTHESES.items():
        h = dig(s, "hypotheses", key)
        holds, predicted = dig(h, "holds"), dig(h, "predicted")
        if predicted is None:
            predicted = dig(pred, "predicted", key)
        if s is None:
            m.add(f"{tag}Verdict", "not yet tested: no runs have been made")
        else:
            m.add(
                f"{tag}Verdict",
                PENDING if holds is None else ("holds" if holds else "does not hold"),
            )
        if predicted is None:
            m.add(f"{tag}Predicted", "no prediction stored yet" if pred is None else PENDING)
        else:
            m.add(f"{tag}Predicted", "predicted" if predicted else "not predicted")
        effect, ci, test = fmt(dig(h, "effect"), 3), fmt_ci(dig(h, "ci95"), 3), dig(h, "test")
        if s is None:
            detail = "No effect has been measured."
        else:
            detail = f"Effect {effect} {ci}; test: {PENDING if test is None else test}."
        m.add(f"{tag}Detail", detail)
        m.add(f"{tag}P", fmt(dig(h, "p"), 3))
        stat = "h1_statistic" if tag == "HypOne" else "h2_statistic"
        for task in TASKS:
            tt = task.capitalize()
            m.add(f"{tag}Pred{tt}", _band(dig(pred, "tasks", task, stat), 3, "ci90"))
            m.add(
                f"{tag}PredProb{tt}", fmt(dig(pred, "tasks", task, f"{stat[:2]}_prob_positive"), 2)
            )
            pt = dig(h, "per_task", task)
            e = dig(pt, "effect")
            m.add(
                f"{tag}Effect{tt}",
                PENDING if e is None else f"{_signed(e)} {fmt_ci(dig(pt, 'ci95'), 3)}",
            )
            m.add(f"{tag}P{tt}", fmt(dig(pt, "p"), 3))
    _per_motif(m, pred, s)
    _oscillation(m, pred, s)
    for task in TASKS:
        for measure, mt in (("dip", "Dip"), ("recovery", "Rec")):
            r = dig(s, "rank_agreement", task, measure)
            m.add(f"HypRank{mt}{task.capitalize()}", fmt(dig(r, "spearman"), 2))
            m.add(f"HypRankP{mt}{task.capitalize()}", fmt(dig(r, "p"), 2))
    m.add("HypDiscussion", discussion(s))


def _design(m: Macros, cfg: Any) -> None:
    m.add("HypSteps", fmt(dig(cfg, "steps"), 0))
    m.add("HypEvalEvery", fmt(dig(cfg, "eval_every"), 0))
    m.add("HypSeeds", PENDING if cfg is None else str(len(cfg["seeds"])))
    m.add("HypPilotSeeds", PENDING if cfg is None else str(len(cfg["pilot_seeds"])))
    m.add("HypLr", PENDING if cfg is None else f"{cfg['lr']:g}")
    m.add("HypPulseStarts", PENDING if cfg is None else and_list(cfg["pulse_starts"]))
    m.add("HypPulseLength", fmt(dig(cfg, "pulse_length"), 0))
    m.add("HypShiftStep", fmt(dig(cfg, "shift_step"), 0))
    m.add("HypLagStaleness", fmt(dig(cfg, "lag_staleness"), 0))
    m.add("HypNProbe", fmt(dig(cfg, "n_probe"), 0))
    m.add("HypNTest", fmt(dig(cfg, "n_test"), 0))
    if cfg is None:
        m.add("HypRuns", PENDING)
    else:
        n = len(cfg["seeds"]) * (
            2 * len(cfg["tasks"]) * len(cfg["motifs"]) + len(cfg["lag_motifs"])
        )
        m.add("HypRuns", str(n))


def _per_motif(m: Macros, pred: Any, s: Any) -> None:
    """Measured dip and recovery (mean [95 % CI]) and the predicted ones, per task and motif."""
    for task in TASKS:
        tt = task.capitalize()
        for motif in MOTIFS:
            mt = letters(motif)
            m.add(f"HypDip{tt}{mt}", _band(dig(s, "per_motif", "pulse", task, motif, "dip"), 3))
            m.add(
                f"HypRec{tt}{mt}", _band(dig(s, "per_motif", "shift", task, motif, "recovery"), 3)
            )
            m.add(f"HypPredDip{tt}{mt}", fmt(dig(pred, "tasks", task, "dip", motif, "mean"), 3))
            m.add(
                f"HypPredRec{tt}{mt}", fmt(dig(pred, "tasks", task, "recovery", motif, "mean"), 3)
            )


def _oscillation(m: Macros, pred: Any, s: Any) -> None:
    osc = dig(s, "hypotheses", "i1_adapts_faster", "oscillation")
    n = dig(osc, "runs")
    for motif in ("C1", "I1"):
        k = dig(osc, "oscillating", motif)
        m.add(f"HypOsc{letters(motif)}", PENDING if k is None or n is None else f"{k}/{n}")
        frac = dig(pred, "tasks", "math", "lag_oscillation_fraction", motif)
        m.add(f"HypPredOsc{letters(motif)}", fmt(frac, 0, 100))
    m.add("HypOscP", fmt(dig(osc, "p_fisher"), 3))
    holds = dig(osc, "holds")
    m.add("HypOscVerdict", PENDING if holds is None else ("holds" if holds else "does not hold"))
    p = dig(pred, "predicted", "i1_oscillates_where_c1_does_not")
    m.add("HypOscPredicted", PENDING if p is None else ("predicted" if p else "not predicted"))


ORDINALS = ("first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth")


def discussion(s: Any) -> str:
    """What the per-motif means show beyond the tests: per task, the motif with the smallest
    mean dip and C1's rank, and the motif with the largest mean recovery and I1's rank."""
    if s is None:
        return ""
    parts = []
    for task in TASKS:
        dips = {
            k: dig(v, "dip", "mean") for k, v in (dig(s, "per_motif", "pulse", task) or {}).items()
        }
        recs = {k: dig(v, "recovery", "mean")
                for k, v in (dig(s, "per_motif", "shift", task) or {}).items()}  # fmt: skip
        dips = {k: v for k, v in dips.items() if v is not None}
        recs = {k: v for k, v in recs.items() if v is not None}
        if "C1" not in dips or "I1" not in recs:
            continue
        by_dip, by_rec = sorted(dips, key=dips.get), sorted(recs, key=recs.get, reverse=True)
        rises = [dig(v, "rise") for c in ("pulse", "shift")
                 for v in (dig(s, "per_motif", c, task) or {}).values()]  # fmt: skip
        rises = [r for r in rises if isinstance(r, dict)]
        if rises:
            mean = {a: sum(r[a] for r in rises) / len(rises) for a in rises[0]}
            parts.append(
                f"On {task} the largest rise of each agent's probe competence above its "
                "initial level was "
                + ", ".join(f"{a} {v:+.2f}" for a, v in mean.items())
                + " (mean over runs)."
            )
        parts.append(
            f"On {task} the smallest mean dip was {by_dip[0]}'s (C1 ranked "
            f"{ORDINALS[by_dip.index('C1')]} of {len(by_dip)}) and the largest mean recovery "
            f"{by_rec[0]}'s (I1 ranked {ORDINALS[by_rec.index('I1')]} of {len(by_rec)})."
        )
    return " ".join(parts)
