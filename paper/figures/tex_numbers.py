"""Write ``paper/numbers.tex``: every number the paper quotes, as a LaTeX macro.

The numbers come from the figure scripts' JSON (``--figures``: ``presets.json``,
``oscillation.json``, ``phase/summary.json``) and the committed study results (``--results``:
``regime_map/``, ``recommend_old_testbed/``, ``pool_old_testbed/``, ``hypotheses_old_testbed/``;
the new testbed's ``testbed/``, ``forecast/``, ``recommend/``, ``watch/``, ``hypotheses/``,
``pool/``).
Nothing is typed by hand. Every macro is always defined, whatever is present: a number
whose source file is missing reads "pending", so the set of names never depends on which
results exist. Names are ``\\Val`` followed by letters only (``\\ValPhaseCOneSustained``).

``hypotheses_old_testbed/summary.json`` (written by the old testbed's hypotheses study) is read as
``{"hypotheses": {"c1_filters_spurious": H, "i1_adapts_faster": H}}`` with
``H = {"holds": bool, "predicted": bool, "effect": float, "ci95": [lo, hi], "test": str}``;
a missing field reads "pending".

    python -m paper.figures.tex_numbers [--figures paper/figures] [--results paper/results]
                                        [--out paper/numbers.tex]

(The module is not called ``numbers.py``: in this folder that name would shadow the standard
library's ``numbers``, which numpy imports, and break every figure script run from here.)
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path
from typing import Any

from paper.figures._tex_common import (
    MOTIFS,
    PENDING,
    REGIMES,
    Macros,
    dig,
    fmt,
    fmt_ci,
    letters,
    read_json,
)

HERE = Path(__file__).resolve().parent
PAPER = HERE.parent
_DEFINED = re.compile(r"\\newcommand\{?\\(Val[A-Za-z]+)\}?")
_USED = re.compile(r"\\(Val[A-Za-z]+)")


# -- the simulator's figures -------------------------------------------------------------
def presets(m: Macros, figures: Path) -> None:
    """Sign-sensitive delays of C1 (AND, OR) and the pulsing presets."""
    doc = dig(read_json(figures / "presets.json"), "presets")
    for preset in ("C1-AND", "C1-OR"):
        for key, tag in (("z_t50_on", "TOn"), ("z_t50_off", "TOff")):
            m.add(f"Preset{letters(preset)}{tag}", fmt(dig(doc, preset, key)))
    pulsing = (
        None if doc is None else sorted(k for k, v in doc.items() if v["regime"] != "converged")
    )
    m.add("PresetsNonConverged", PENDING if pulsing is None else str(len(pulsing)))
    m.add("PresetsNonConvergedList", PENDING if pulsing is None else ", ".join(pulsing))
    m.add("PresetIOneANDRegime", dig(doc, "I1-AND", "regime") or PENDING)


def oscillation(m: Macros, figures: Path) -> None:
    """Hopf onset against the lag, the three trajectories, the flip of the learning map."""
    doc = read_json(figures / "oscillation.json")
    m.add("OscHopfTau", fmt(dig(doc, "hopf_tau"), 1))
    m.add("OscPeakRate", fmt(dig(doc, "max_real_peak"), 3))
    m.add("OscPeakTau", fmt(dig(doc, "max_real_peak_tau"), 1))
    m.add("OscFlipEta", fmt(dig(doc, "flip_eta"), 2))
    for tau, tag in (("0.5", "Short"), ("3", "Mid"), ("10", "Long")):
        m.add(f"OscLag{tag}Regime", dig(doc, "lags", tau) or PENDING)


def phase(m: Macros, figures: Path) -> None:
    """Regime counts of the eight FFLs with critic feedback and lag."""
    doc = read_json(figures / "phase" / "summary.json")
    axes = dig(doc, "axes")
    cells = None if axes is None else int(axes[0]["num"] * axes[1]["num"])
    grid = None if axes is None else f"{axes[0]['num']}\\,$\\times$\\,{axes[1]['num']}"
    m.add("PhaseGrid", grid or PENDING, raw=True)
    m.add("PhaseCells", PENDING if cells is None else str(cells))
    m.add("PhaseHorizon", fmt(dig(doc, "t1"), 0))
    unsettled = 0
    for motif in MOTIFS:
        counts = dig(doc, "regime_counts", f"{motif}-AND")
        for regime, tag in REGIMES.items():
            m.add(f"Phase{letters(motif)}{tag}", fmt(dig(counts, regime), 0))
        osc = (
            None
            if counts is None
            else counts["damped oscillation"] + counts["sustained oscillation"]
        )
        pct = None if osc is None or not cells else 100.0 * osc / cells
        m.add(f"Phase{letters(motif)}OscPct", fmt(pct, 0))
        unsettled += 0 if counts is None else counts["unsettled"]
    m.add("PhaseUnsettledTotal", PENDING if doc is None else str(unsettled))


# -- the studies on real runs -----------------------------------------------------------
def regime_map(m: Macros, results: Path) -> None:
    """Predicted vs observed regimes over rl.lr x rl.staleness, and the fit behind them."""
    s = read_json(results / "regime_map" / "summary.json")
    design = dig(read_json(results / "regime_map" / "config.json"), "design")
    m.add("RMAccuracy", fmt(dig(s, "regime_accuracy")))
    m.add("RMAccuracyCI", fmt_ci(dig(s, "regime_accuracy_ci95")))
    m.add("RMBaseAccuracy", fmt(dig(s, "baseline_regime_accuracy")))
    m.add("RMBaseAccuracyCI", fmt_ci(dig(s, "baseline_regime_accuracy_ci95")))
    m.add("RMCoverage", fmt(dig(s, "coverage90")))
    m.add("RMCoverageCI", fmt_ci(dig(s, "coverage90_ci95")))
    m.add("RMBaseCoverage", fmt(dig(s, "baseline_coverage90")))
    m.add("RMBoundary", fmt(dig(s, "boundary_error_decades")))
    m.add("RMBaseBoundary", fmt(dig(s, "baseline_boundary_error_decades")))
    m.add("RMHeldout", fmt(dig(s, "n_heldout_runs"), 0))
    m.add("RMPilots", fmt(dig(s, "n_pilot_runs"), 0))
    for label, tag in (
        ("converged", "Converged"),
        ("collapse", "Collapse"),
        ("overshoot/pulse", "Pulse"),
    ):
        m.add(f"RMObserved{tag}", fmt(dig(s, "regime_labels_observed", label), 0))
    m.add(
        "RMAccuracyVsBase",
        compare(
            dig(s, "regime_accuracy"),
            dig(s, "baseline_regime_accuracy"),
            "higher than",
            "lower than",
        ),
    )
    m.add(
        "RMCoverageVsBase",
        compare(dig(s, "coverage90"), dig(s, "baseline_coverage90"), "higher than", "lower than"),
    )
    m.add(
        "RMBoundaryVsBase",
        compare(
            dig(s, "boundary_error_decades"),
            dig(s, "baseline_boundary_error_decades"),
            "larger than",
            "smaller than",
        ),
    )
    labels = dig(s, "regime_labels_observed")
    osc = (
        None
        if labels is None
        else sum(
            v for k, v in labels.items() if k in ("damped oscillation", "sustained oscillation")
        )
    )
    m.add("RMObservedOsc", fmt(osc, 0))
    first = dig(s, "predictions_before_heldout_runs")
    m.add("RMPredictedFirst", PENDING if first is None else ("yes" if first else "no"))
    m.add(
        "RMHours",
        fmt(None if dig(s, "wall_s", "total") is None else s["wall_s"]["total"] / 3600, 1),
    )
    m.add("RMLrs", PENDING if design is None else ", ".join(f"{x:g}" for x in design["lrs"]))
    m.add(
        "RMStaleness", PENDING if design is None else ", ".join(str(x) for x in design["staleness"])
    )
    m.add("RMSteps", fmt(dig(design, "steps"), 0))
    m.add("RMSeeds", PENDING if design is None else str(len(design["seeds"])))
    fit = read_json(results / "regime_map" / "fit" / "summary.json")
    diag = read_json(results / "regime_map" / "fit" / "diagnostics.json")
    for key, tag in (
        ("c[rho[X]~rl.lr]", "RhoXLr"),
        ("c[delta[X]~rl.lr]", "DeltaXLr"),
        ("c[rho[Z]~rl.lr]", "RhoZLr"),
    ):
        m.add(f"Slope{tag}", fmt(dig(fit, key, "mean")))
        lo, hi = dig(fit, key, "q05"), dig(fit, key, "q95")
        m.add(f"Slope{tag}CI", fmt_ci(None if lo is None else [lo, hi]))
    rho, dlt = dig(fit, "c[rho[X]~rl.lr]", "mean"), dig(fit, "c[delta[X]~rl.lr]", "mean")
    m.add("SlopeRhoXWord", PENDING if rho is None else ("more slowly" if rho < 0 else "faster"))
    m.add("SlopeDeltaXWord", PENDING if dlt is None else ("faster" if dlt > 0 else "more slowly"))
    m.add("FitParetoK", fmt(dig(diag, "is_pareto_k")))
    m.add(
        "FitSolverError",
        PENDING if dig(diag, "solver_error") is None else f"{diag['solver_error']:.1e}",
    )
    m.add("FitSeconds", fmt(dig(diag, "timing_s", "total_s"), 0))


def compare(a: Any, b: Any, more: str, less: str) -> str:
    """``more``/``less``/"equal to" as ``a`` compares with ``b`` (at 3 decimals)."""
    if not isinstance(a, int | float) or not isinstance(b, int | float):
        return PENDING
    ra, rb = round(float(a), 3), round(float(b), 3)
    return more if ra > rb else less if ra < rb else "equal to"


RECOMMEND_METHODS = {
    "motif model": "MotifZ",
    "motif model (X)": "MotifX",
    "random search": "Random",
    "optuna": "Optuna",
    "gp surrogate": "GP",
    "curve extrapolation": "Extrap",
}


def recommend(m: Macros, results: Path) -> None:
    """Regret of each method on the real grid, unstable picks, the best setting."""
    s = read_json(results / "recommend_old_testbed" / "summary.json")
    design = dig(read_json(results / "recommend_old_testbed" / "config.json"), "design")
    for name, tag in RECOMMEND_METHODS.items():
        m.add(f"Rec{tag}Regret", fmt(dig(s, "regret", name, "mean"), 3))
        m.add(f"Rec{tag}RegretCI", fmt_ci(dig(s, "regret", name, "ci95"), 3))
        u = dig(s, "unstable_picks", name)
        m.add(f"Rec{tag}Unstable", PENDING if u is None else f"{u['count']}/{u['n']}")
    m.add("RecBestLr", fmt(dig(s, "best_setting", "rl.lr"), 3))
    m.add("RecBestStaleness", fmt(dig(s, "best_setting", "rl.staleness"), 0))
    m.add("RecBestValue", fmt(dig(s, "best_value"), 3))
    m.add("RecBudget", fmt(dig(design, "budget_steps"), 0))
    m.add("RecRepeats", fmt(dig(design, "rng_seeds"), 0))
    m.add("RecPilotSeeds", PENDING if design is None else str(len(design["seeds"])))
    regret = {tag: dig(s, "regret", name, "mean") for name, tag in RECOMMEND_METHODS.items()}
    m.add("RecMotifZVsRandom", compare(regret["MotifZ"], regret["Random"], "higher", "lower"))
    m.add("RecMotifXVsGP", compare(regret["MotifX"], regret["GP"], "higher than", "lower than"))
    m.add("RecBestSentence", best_sentence(s, read_json(results / "regime_map" / "config.json")))
    low = dig(s, "lowest_mean_regret")
    m.add("RecLowest", PENDING if low is None else str(low))


def best_sentence(summary: Any, regime_cfg: Any) -> str:
    """Whether the grid's best setting is one of the pilots' corners, and what that implies."""
    best, design = dig(summary, "best_setting"), dig(regime_cfg, "design")
    if best is None or design is None:
        return PENDING
    corners = [(design["lrs"][i], design["staleness"][j]) for i, j in design["pilots"]]
    if (best["rl.lr"], best["rl.staleness"]) in corners:
        return (
            "The best setting is one of the pilots' corners, so this grid cannot tell the "
            "model from keeping the best pilot; a grid whose optimum lies inside it is the "
            "test still to run."
        )
    return "The best setting is not one of the pilots' settings."


def main(argv: list[str] | None = None) -> int:
    """Write numbers.tex; exit 2 with one line when an input file is unreadable."""
    from paper.figures._tex_numbers_hyp import hypotheses
    from paper.figures._tex_numbers_pool import pool
    from paper.figures._tex_numbers_pool_testbed import pool_testbed
    from paper.figures._tex_numbers_testbed import (
        forecast,
        hypotheses_testbed,
        readbacks,
        recommend_testbed,
        testbed,
        watch,
    )

    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--figures", default=str(HERE))
    ap.add_argument("--results", default=str(PAPER / "results"))
    ap.add_argument("--out", default=str(PAPER / "numbers.tex"))
    args = ap.parse_args(argv)
    m = Macros()
    figures, results = Path(args.figures), Path(args.results)
    try:
        presets(m, figures)
        oscillation(m, figures)
        phase(m, figures)
        regime_map(m, results)
        recommend(m, results)
        pool(m, results)
        hypotheses(m, results)
        testbed(m, results)
        forecast(m, results)
        recommend_testbed(m, results)
        readbacks(m, results)
        watch(m, results)
        hypotheses_testbed(m, results)
        pool_testbed(m, results)
    except (OSError, ValueError, KeyError, TypeError) as err:  # malformed or unreadable input
        print(f"error: numbers.tex not written: {type(err).__name__}: {err}", file=sys.stderr)
        return 2
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + ".tmp")
    tmp.write_text(m.render(), encoding="utf-8")
    tmp.replace(out)
    pending = sum(v == PENDING for v in m.values.values())
    print(f"numbers: {out} ({len(m.values)} macros, {pending} pending)")
    return 0


def defined_macros(numbers_tex: str) -> set[str]:
    """Names defined by ``\\newcommand{\\Val...}`` in a numbers.tex text."""
    return set(_DEFINED.findall(numbers_tex))


def used_macros(main_tex: str) -> set[str]:
    """Names of the ``\\Val...`` macros a LaTeX text uses (comments ignored)."""
    body = "\n".join(re.sub(r"(?<!\\)%.*", "", line) for line in main_tex.splitlines())
    return set(_USED.findall(body)) - defined_macros(body)


def undefined_macros(main_tex: str, numbers_tex: str) -> list[str]:
    """The ``\\Val...`` macros ``main_tex`` uses that ``numbers_tex`` does not define."""
    return sorted(used_macros(main_tex) - defined_macros(numbers_tex))


if __name__ == "__main__":
    sys.exit(main())
