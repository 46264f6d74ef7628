"""The new testbed's macros of ``tex_numbers.py`` (split for module size): the testbed study
(``testbed/``), the forecast and recommendation benchmarks on it (``forecast/``,
``recommend/``), the early-warning replay (``watch/``) and the hypotheses study on it
(``hypotheses/``). A missing file or field reads "pending"."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from paper.figures._tex_common import PENDING, Macros, dig, fmt, fmt_ci, letters, read_json

EDGES = ("X->Y", "X->Z", "Y->Z")
FORECAST_METHODS = {  # summary label -> macro tag
    "motif model (new run)": "Model",
    "nearest pilot": "Nearest",
    "GP over knobs": "GP",
    "GP classifier": "GPC",
    "sigmoid on first 50 steps": "Sigmoid",
}
REC_METHODS = {"motif model": "Model", "best pilot": "BestPilot", "random search": "Random"}


def pct(x: Any) -> str:
    """A share as a whole percentage ("36"); "pending" for None."""
    return fmt(x, 0, 100.0)


def signed(x: Any, digits: int = 3) -> str:
    """A number with its sign ("+0.123"); "pending" for None."""
    return PENDING if fmt(x) == PENDING else f"{float(x):+.{digits}f}"


def testbed(m: Macros, results: Path) -> None:
    """Role rise, edge effects (coupling), the types' separation, the wiring read back."""
    s = read_json(results / "testbed" / "summary.json")
    for task in ("math", "rag"):
        for role in ("X", "Y", "Z"):
            r = dig(s, "role_rise", task, "roles", role)
            m.add(f"TB{letters(task).title()}Rise{role}", signed(dig(r, "rise"), 2))
    m.add("TBSeeds", fmt(dig(s, "role_rise", "math", "seeds"), 0))
    for e in EDGES:
        tag = letters(e.replace("->", "to").upper())
        eff = dig(s, "edge_effects", "effects", f"{e}/coupling", "act-rep")
        m.add(f"TBEdge{tag}", signed(dig(eff, "auc")))
        m.add(f"TBEdge{tag}CI", fmt_ci(dig(eff, "auc_ci95"), 3))
    sep = dig(s, "motif_separation")
    m.add("TBPairsDistinct", fmt(dig(sep, "distinguishable_pairs"), 0))
    m.add("TBPairsTested", fmt(dig(sep, "tested_pairs"), 0))
    m.add("TBOmnibusP", fmt(dig(sep, "omnibus_p"), 4))
    wiring_macros(m, "TB", dig(s, "wiring_identification", "sets"))


#: The later read-backs of the wiring (issue 29 §4): results folder -> macro prefix.
READBACKS = {"wiring_weights": "RBW", "wiring_pulses": "RBX", "wiring_knockdowns": "RBXY",
             "wiring_early": "RBE"}  # fmt: skip


def wiring_macros(m: Macros, prefix: str, sets: dict[str, Any] | None) -> None:
    """``<prefix>WiringSets``, ``...TruthOk`` (first or indistinguishable), ``...WrongSign``
    (sets with a wrong identified sign) and ``...TwoSigns`` (sets with >= 2 signs)."""

    def count(pred: Any) -> str:
        return PENDING if sets is None else str(sum(bool(pred(v)) for v in sets.values()))

    m.add(f"{prefix}WiringSets", PENDING if sets is None else str(len(sets)))
    m.add(f"{prefix}WiringTruthOk", count(lambda v: v["rank"] == 1 or v["in_indistinguishable"]))
    m.add(f"{prefix}WiringWrongSign", count(lambda v: not all(v["identified_correct"].values())))
    m.add(f"{prefix}WiringTwoSigns", count(lambda v: len(v["identified"]) >= 2))


def _family(sets: dict[str, Any] | None, fam: str) -> dict[str, Any] | None:
    """The sets of one family (names ending ``_<fam>``), or None."""
    return None if sets is None else {k: v for k, v in sets.items() if k.endswith(f"_{fam}")}


def readbacks(m: Macros, results: Path) -> None:
    """The later read-backs' measures (weight family, knock-down of X, of X and Y, Y
    knocked down early: ``RBE``), and both knock-downs refitted with the fitted flip law
    (``RBFX``, ``RBFXY``)."""
    for folder, prefix in READBACKS.items():
        s = read_json(results / folder / "summary.json")
        wiring_macros(m, prefix, dig(s, "wiring_identification", "sets"))
    sets = dig(
        read_json(results / "wiring_floor" / "summary.json"), "wiring_identification", "sets"
    )
    for fam, prefix in (("x", "RBFX"), ("xy", "RBFXY")):
        wiring_macros(m, prefix, _family(sets, fam))
    # logged regulators on the committed sets (RBL*), and on new runs (RBC*; RBC*P: the
    # pointwise se of the same fits)
    families = {"RBL": (("weights", "W"), ("x", "X"), ("early", "E")),
                "RBC": (("x", "X"), ("early", "E")), "RBT": (("early", "E"),),
                "RBG": (("early", "E"),), "RBR": (("early", "E"),)}  # fmt: skip
    # RBT*: edge thresholds inside Y's range (wiring_threshold); RBG*: and the pipeline gates
    # on the logged competence (wiring_gates); RBR*: and a greedy readout (wiring_readout)
    for folder, tag in (("wiring_logged", "RBL"), ("wiring_confirm", "RBC"),
                        ("wiring_threshold", "RBT"), ("wiring_gates", "RBG"),
                        ("wiring_readout", "RBR")):  # fmt: skip
        s = read_json(results / folder / "summary.json")
        sets = dig(s, "wiring_identification", "sets")
        for fam, letter in families[tag]:
            wiring_macros(m, f"{tag}{letter}", _family(sets, fam))
            if tag != "RBL":
                pw = dig(s, "pointwise", fam)
                for key, name in (("truth_first_or_indistinguishable_sets", "TruthOk"),
                                  ("sets_with_a_wrong_sign", "WrongSign"),
                                  ("sets_with_two_signs", "TwoSigns")):  # fmt: skip
                    m.add(f"{tag}{letter}PWiring{name}", fmt(dig(pw, key), 0))
    # RRP*: each condition at two seeds, the se from the replicates (wiring_replicates); RRQ*:
    # its replication on C1 and I1 (wiring_replicates_rep); per se read: R (replicates,
    # primary), T (its Student-t band), B (by run and agent), P (pointwise)
    for folder, tag in (("wiring_replicates", "RRP"), ("wiring_replicates_rep", "RRQ")):
        reads = dig(read_json(results / folder / "summary.json"), "se_reads")
        for read, letter in (("replicates", "R"), ("replicates_t", "T"), ("blocks", "B"),
                             ("pointwise", "P")):  # fmt: skip
            for key, name in (("n_sets", "Sets"),
                              ("truth_first_or_indistinguishable_sets", "TruthOk"),
                              ("sets_with_a_wrong_sign", "WrongSign"),
                              ("sets_with_two_signs", "TwoSigns")):  # fmt: skip
                m.add(f"{tag}{letter}{name}", fmt(dig(reads, read, key), 0))


def forecast(m: Macros, results: Path) -> None:
    """The forecast benchmark on the testbed: every method's scores on all held-out runs."""
    s = read_json(results / "forecast" / "summary.json")
    m.add("FCHeldout", fmt(dig(s, "n_heldout_runs"), 0))
    m.add("FCPilots", fmt(dig(s, "n_pilot_runs"), 0))
    for label, tag in FORECAST_METHODS.items():
        d = dig(s, "methods", label)
        m.add(f"FC{tag}Acc", fmt(dig(d, "regime_accuracy")))
        m.add(f"FC{tag}AccCI", fmt_ci(dig(d, "regime_accuracy_ci95")))
        m.add(f"FC{tag}Cov", fmt(dig(d, "coverage90", "all")))
        m.add(f"FC{tag}CRPS", fmt(dig(d, "crps", "all"), 3))
        m.add(f"FC{tag}Boundary", fmt(dig(s, "boundary_error", "all", label)))
    ext = dig(s, "coverage90", "extrapolation", "motif model (new run)", "all")
    m.add("FCModelCovOutside", fmt(ext))
    # the second predict-first test: bent links, their spread chosen on the runs above
    bent = {**FORECAST_METHODS, "motif model, bent links (new run)": "Bent"}
    r = _later_test(m, results / "forecast_round2", "FR", bent)
    m.add("FRSd", fmt(dig(r, "extrapolation_sd"), 2))
    for label, tag in bent.items():
        m.add(f"FR{tag}Log", fmt(dig(r, "methods", label, "log_score", "all")))
        m.add(f"FR{tag}CovOutside", fmt(dig(r, "coverage90", "extrapolation", label, "all")))
    # the third: the same at other settings, and the regimes labelled by the runs' own rule
    _later_test(m, results / "forecast_round3", "FT",
                {**bent, "motif model, bent links, runs' rule (new run)": "Rule"})  # fmt: skip
    # the fourth: X's forgetting linked to its learning-rate scale, links chosen on the above
    _later_test(m, results / "forecast_round4", "FQ",
                {**bent, "motif model, first links, bent links (new run)": "First"})  # fmt: skip
    # the fifth: X's rates on the learning rate X trains at, regimes by the runs' rule
    base = {k: v for k, v in FORECAST_METHODS.items() if not k.startswith("motif")}
    _later_test(m, results / "forecast_round5", "FV", {
        **base, "motif model, X's own lr, bent links, runs' rule (new run)": "Rule",
        "motif model, X's own lr, bent links (new run)": "Bent",
        "motif model, round 4's links, bent links, runs' rule (new run)": "Four",
        "GP classifier, X's own lr too": "GPCOwn"})  # fmt: skip


def _later_test(m: Macros, folder: Path, prefix: str, methods: dict[str, str]) -> Any:
    """A later predict-first test's macros: its run count, and per method its regime
    accuracy (with interval), 90 % coverage and CRPS; returns its summary (None: pending)."""
    s = read_json(folder / "summary.json")
    m.add(f"{prefix}Heldout", fmt(dig(s, "n_runs", "all"), 0))
    for label, tag in methods.items():
        d = dig(s, "methods", label)
        m.add(f"{prefix}{tag}Acc", fmt(dig(d, "regime_accuracy")))
        m.add(f"{prefix}{tag}AccCI", fmt_ci(dig(d, "regime_accuracy_ci95")))
        m.add(f"{prefix}{tag}Cov", fmt(dig(d, "coverage90", "all")))
        m.add(f"{prefix}{tag}CRPS", fmt(dig(d, "crps", "all"), 3))
    return s


def recommend_testbed(m: Macros, results: Path) -> None:
    """The recommendation benchmark on the testbed: regrets and the best cell."""
    s = read_json(results / "recommend" / "summary.json")
    for label, tag in REC_METHODS.items():
        m.add(f"RT{tag}Regret", fmt(dig(s, "regret", label, "mean"), 3))
        m.add(f"RT{tag}RegretCI", fmt_ci(dig(s, "regret", label, "ci95"), 3))
    m.add("RTBestValue", fmt(dig(s, "best_value"), 3))
    reps = dig(s, "regret", "motif model", "n")
    m.add("RTRepetitions", fmt(reps, 0))


def watch(m: Macros, results: Path) -> None:
    """The early-warning replays: the first testbed's committed runs, and the held-out runs
    of the testbed with both updates."""
    s = read_json(results / "watch" / "summary.json")
    m.add("WRuns", fmt(dig(s, "n_runs"), 0))
    m.add("WCollapsed", fmt(dig(s, "n_collapsed"), 0))
    m.add("WFlagged", pct(dig(s, "flagged_share")))
    m.add("WFalse", fmt(dig(s, "false_alert_share"), 1, 100.0))
    m.add("WForecastable", fmt(dig(s, "breakdown", "forecastable", "n"), 0))
    m.add("WForecastableFlagged", pct(dig(s, "breakdown", "forecastable", "flagged_share")))
    m.add("WLaterAlerts", fmt(dig(s, "breakdown", "alerts_after_first"), 0))
    m.add("WEssFourth", fmt(dig(s, "ess", "fourth"), 0))
    m.add("WDraws", fmt(dig(s, "ess", "draws"), 0))
    h = read_json(results / "watch_testbed" / "summary.json")
    m.add("WHeldRuns", fmt(dig(h, "n_runs"), 0))
    m.add("WHeldCollapsed", fmt(dig(h, "n_collapsed"), 0))
    for method in ("weights", "laplace"):
        tag = method.title()
        m.add(f"WHeld{tag}Flagged", pct(dig(h, "methods", method, "flagged_share")))
        m.add(f"WHeld{tag}False", pct(dig(h, "methods", method, "false_alert_share")))


def hypotheses_testbed(m: Macros, results: Path) -> None:
    """The hypotheses study on the testbed: its power calculation, lagged setting, stored
    predictions and results (``summary.json``)."""
    root = results / "hypotheses"
    cfg, pw = read_json(root / "config.json"), read_json(root / "power.json")
    ch, pred = read_json(root / "choose.json"), read_json(root / "predictions.json")
    m.add("HTEffect", fmt(dig(cfg, "effect")))
    m.add("HTSdDip", fmt(dig(pw, "sd", "dip"), 3))
    m.add("HTSdRecovery", fmt(dig(pw, "sd", "recovery"), 3))
    m.add("HTSeeds", fmt(dig(pw, "seeds"), 0))
    m.add("HTLagLr", PENDING if ch is None else f"{dig(ch, 'chosen', 'rl.lr'):g}")
    m.add("HTLagStaleness", fmt(dig(ch, "chosen", "rl.staleness"), 0))
    m.add("HTLagOscIOne", fmt(dig(ch, "predicted_oscillation", "I1")))
    for task in ("math", "rag"):
        t = letters(task).title()
        for h, tag in (("h1", "HOne"), ("h2", "HTwo")):
            m.add(f"HT{t}{tag}", signed(dig(pred, "tasks", task, f"{h}_statistic", "mean")))
            m.add(f"HT{t}{tag}Holds", fmt(dig(pred, "tasks", task, f"{h}_measured", "p_holds")))
    hypotheses_results(m, read_json(root / "summary.json"))


def _verdict(h: Any) -> str:
    holds = dig(h, "holds")
    return PENDING if holds is None else ("holds" if holds else "does not hold")


def hypotheses_results(m: Macros, s: Any) -> None:
    """The tests' verdicts, each stored interval checked, and the post-hoc X->Y grouping."""
    for key, tag in (("c1_filters_spurious", "One"), ("i1_adapts_faster", "Two")):
        h = dig(s, "hypotheses", key)
        m.add(f"HT{tag}Effect", signed(dig(h, "effect")))
        m.add(f"HT{tag}CI", fmt_ci(dig(h, "ci95"), 3))
        m.add(f"HT{tag}P", fmt(dig(h, "p")))
        m.add(f"HT{tag}Verdict", _verdict(h))
        for task in ("math", "rag"):
            c = dig(s, "predictions_checked", key, task)
            t = letters(task).title()
            m.add(f"HT{t}H{tag}Measured", signed(dig(c, "measured")))
            inside = dig(c, "inside_ci90")
            m.add(f"HT{t}H{tag}Inside", PENDING if inside is None else
                  ("inside" if inside else "outside"))  # fmt: skip
    osc = dig(s, "hypotheses", "i1_adapts_faster", "oscillation")
    for motif in ("I1", "C1"):
        k, n = dig(osc, "oscillating", motif), dig(osc, "runs")
        m.add(f"HTOsc{letters(motif)}", PENDING if k is None or n is None else f"{k}/{n}")
    m.add("HTOscVerdict", _verdict(osc))
    rec = dig(s, "post_hoc_by_xy_sign", "recovery", "math")
    m.add("HTRecAct", fmt(dig(rec, "activating")))
    m.add("HTRecRep", fmt(dig(rec, "repressing")))
    dips = [dig(s, "per_motif", "pulse", "math", mt, "dip", "mean") for mt in
            ("C1", "C2", "C3", "C4", "I1", "I2", "I3", "I4")]  # fmt: skip
    ok = [d for d in dips if isinstance(d, float)]
    m.add("HTMathDipMin", fmt(min(ok) if len(ok) == len(dips) else None, 3))
    m.add("HTMathDipMax", fmt(max(ok) if len(ok) == len(dips) else None, 3))
