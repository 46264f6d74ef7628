"""The library of ``python -m paper.wiring_replicates`` (its design, phases and summary; the
driver, paper/wiring_replicates.py, states the design): kept apart so that other studies of
its family import this helper, never the study."""

from __future__ import annotations

import copy
import dataclasses
from pathlib import Path
from typing import Any

from paper._wiring_confirm import _early_at
from paper._wiring_threshold import READOUT_ARGS, READOUT_QUICK, ReadoutDesign

ROOT = Path(__file__).resolve().parents[1]

REPLICATES_ARGS = [*READOUT_ARGS, "--dse-replicates"]
KINDS_KEPT = ("w0", "w0.9", "pulse")  # X knocked down kept; the early Y knock-down ("pulseYe") not


@dataclasses.dataclass
class ReplicatesDesign(ReadoutDesign):
    """The design (see the module docstring)."""

    early: dict[str, Any] = dataclasses.field(default_factory=lambda: _early_at([8, 9]))
    fit_args: list[str] = dataclasses.field(default_factory=lambda: list(REPLICATES_ARGS))
    kinds: list[str] = dataclasses.field(default_factory=lambda: list(KINDS_KEPT))
    hypothesis: str = (
        "with each condition at two seeds and the se of each difference stratified by "
        "condition and agent, the truth is first or indistinguishable in every set, no "
        "identified sign is wrong, and >= 2 of the 3 signs are identified in most sets"
    )
    #: The stored design's field, frozen with it (run as ``python -m paper.wiring_replicates``).
    command: str = "python paper/wiring_replicates.py"
    figure = "wiring_replicates.png"
    #: An earlier study whose counts the summary adds to this one's (a class attribute).
    pooled_with = None

    def sets(self) -> dict[str, list[tuple]]:
        """Per type one set, ``<type>_sets<a>-<b>_early``: the kept kinds of the early
        family's sets, pooled."""
        out: dict[str, list[tuple]] = {}
        early = super().sets()
        ks = self.early["knockdowns"]["earlier"]["wiring_sets"]
        for name, jobs in early.items():
            motif = name.split("_")[0]
            pooled = f"{motif}_sets{ks[0]}-{ks[-1]}_early"
            out.setdefault(pooled, []).extend(j for j in jobs if j[2] in self.kinds)
        return out

    def jobs(self, phase: str) -> list[tuple]:
        """The runs trained here: every run of the pooled sets."""
        if phase != "wiring":
            raise ValueError(f"not a training phase: {phase!r}")
        return [j for js in self.sets().values() for j in js]


def summary_phase(cfg: ReplicatesDesign, runs: Path, out: Path) -> dict[str, Any]:
    """The read-back's summary (:func:`wiring_threshold.summary_phase`; its primary counts,
    ``by_family``, are by the se stratified by condition and agent) with ``se_reads``: per
    se (``replicates``, the primary; ``replicates_t``, its Student-t band; ``blocks``,
    unstratified by run and agent; ``pointwise``) the goal's counts and the share of sets
    with two or more signs, with its 95 % Clopper-Pearson interval; and the table's rows
    under each."""
    import json

    from scipy.stats import norm, t

    from calibrate import ELPD_BAND
    from paper import _wiring_threshold as wiring_threshold
    from paper._wiring_confirm import pointwise_read
    from paper._wiring_floor import family_measures
    from simulate.common import write_json, write_text

    summary = wiring_threshold.summary_phase(cfg, runs, out)
    reads: dict[str, Any] = {}
    per_se: dict[str, dict[str, Any]] = {}
    rows = []
    level = float(norm.cdf(ELPD_BAND))  # the 2-se band's one-sided level
    for se, key in (("replicates", None), ("replicates_t", "dse_t"), ("blocks", "dse_blocks"),
                    ("pointwise", "dse_points")):  # fmt: skip
        sets = {}
        for name in cfg.sets():
            f = out / "wiring" / name / "selection.json"
            if f.is_file():
                sel, motif = json.loads(f.read_text()), name.split("_")[0]
                sel["ranking"] = [  # the t band as a se: band x dse_t = t_q(df) x dse
                    {**r, "dse_t": r["dse"] * (t.ppf(level, r["dse_df"]) / ELPD_BAND
                                               if r.get("dse_df") else 1.0)}
                    for r in sel["ranking"]]  # fmt: skip
                sets[name] = (summary["wiring_identification"]["sets"][name] if key is None
                              else pointwise_read(sel, motif, key))  # fmt: skip
                ident = ", ".join(f"{e} {g}" for e, g in sets[name]["identified"].items())
                rows.append(f"| {se} | {name} | {sets[name]['rank']} | "
                            f"{sets[name]['in_indistinguishable']} | {ident or 'none'} | "
                            f"{all(sets[name]['identified_correct'].values())} |")  # fmt: skip
        per_se[se] = sets
        m = family_measures(sets, None)
        reads[se] = {**m, "two_signs_ci95": _ci(m["sets_with_two_signs"], m["n_sets"])}
    summary["se_reads"] = reads
    dfs = [r["dse_df"] for name in per_se["replicates"]
           for r in json.loads((out / "wiring" / name / "selection.json").read_text())["ranking"]
           if r.get("dse_df")]  # fmt: skip
    summary["dse_df"] = {  # the primary se's degrees of freedom, and its band's level there
        "comparisons": len(dfs),
        "range": [round(min(dfs), 2), round(max(dfs), 2)] if dfs else None,
        "two_se_level_range": [round(float(t.cdf(ELPD_BAND, d)), 3)
                               for d in (min(dfs), max(dfs))] if dfs else None,
        "t_band_se_range": [round(float(t.ppf(level, d)), 2)
                            for d in (max(dfs), min(dfs))] if dfs else None,
    }  # fmt: skip
    if cfg.pooled_with:  # the goal's counts over this study's sets and an earlier one's
        f = ROOT / "paper" / "results" / cfg.pooled_with / "summary.json"
        other = json.loads(f.read_text())["se_reads"] if f.is_file() else None
        summary["pooled_with_" + cfg.pooled_with] = None if other is None else {
            se: {**(c := {k: r[k] + other[se][k] for k in _COUNTS}),
                 "two_signs_ci95": _ci(c["sets_with_two_signs"], c["n_sets"])}
            for se, r in reads.items()}  # fmt: skip
    _figure(per_se, out / cfg.figure)
    summary.pop("two_signs_share", None)  # its "blocks" is the primary here: se_reads says so
    write_json(out / "summary.json", summary)
    head = ["| se | set | rank of the truth | truth indistinguishable | identified | all right |",
            "| --- | --- | --- | --- | --- | --- |"]  # fmt: skip
    counts = [f"- {se}: truth first or indistinguishable in "
              f"{r['truth_first_or_indistinguishable_sets']} of {r['n_sets']} sets, a wrong sign "
              f"in {r['sets_with_a_wrong_sign']}, two or more signs in "
              f"{r['sets_with_two_signs']} (95 % CI {r['two_signs_ci95']})"
              for se, r in reads.items()]  # fmt: skip
    write_text(out / "table.md", "\n".join([*head, *rows, "", *counts, ""]))
    return summary


_COUNTS = ("n_sets", "truth_first_or_indistinguishable_sets", "sets_with_a_wrong_sign",
           "sets_with_two_signs")  # fmt: skip


def _ci(k: int, n: int) -> list[float] | None:
    """95 % Clopper-Pearson interval of k of n (None for no sets)."""
    from scipy.stats import binomtest

    if not n:
        return None
    ci = binomtest(k, n).proportion_ci(method="exact")
    return [round(float(ci.low), 3), round(float(ci.high), 3)]


def _figure(per_se: dict[str, dict[str, Any]], path: Path) -> None:
    """Signs identified per set (bars), under each se read; a wrong one marked with x."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(next(iter(per_se.values()), {}))
    fig, ax = plt.subplots(figsize=(6.4, 3.4))
    width = 0.8 / max(len(per_se), 1)
    for i, (se, sets) in enumerate(per_se.items()):
        x = [j + (i - (len(per_se) - 1) / 2) * width for j in range(len(names))]
        n = [len(sets[nm]["identified"]) if nm in sets else 0 for nm in names]
        ax.bar(x, n, width, label=se)
        for xi, nm in zip(x, names, strict=True):
            if nm in sets and not all(sets[nm]["identified_correct"].values()):
                ax.plot(xi, 0.2, "kx")
    ax.axhline(2, color="grey", lw=0.8, ls="--")
    ax.set_xticks(range(len(names)), [nm.split("_")[0] for nm in names])
    ax.set_yticks([0, 1, 2, 3])
    ax.set_ylabel("edge signs identified (of 3)")
    ax.set_ylim(0, 4)
    ax.legend(fontsize=7, ncol=4, loc="upper center")
    ax.set_title("signs identified per set, by the se of a difference (x: a wrong sign)")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def _quick() -> dict[str, Any]:
    """The readout read-back's ``--quick`` at two sets (two seeds of each condition)."""
    q = copy.deepcopy(READOUT_QUICK)
    q["early"]["knockdowns"]["earlier"]["wiring_sets"] = [0, 1]
    return {**q, "fit_args": [*q["fit_args"], "--dse-replicates"]}


QUICK = _quick()


# -- the replication on new seeds (python -m paper.wiring_replicates_rep) ----------------
def _early_c1_i1(sets: list[int]) -> dict[str, Any]:
    e = _early_at(sets)
    e["knockdowns"]["earlier"]["wiring_types"] = ["C1", "I1"]
    return e


@dataclasses.dataclass
class ReplicationDesign(ReplicatesDesign):
    """The design (see the module docstring)."""

    early: dict[str, Any] = dataclasses.field(default_factory=lambda: _early_c1_i1([10, 11]))
    hypothesis: str = (
        "as paper/wiring_replicates.py's, on new seeds of C1 and I1: the truth first or "
        "indistinguishable, no identified sign wrong, and >= 2 of the 3 signs identified in "
        "both sets, by the se stratified by condition and agent"
    )
    #: The stored design's field, frozen with it (run as ``python -m paper.wiring_replicates_rep``).
    command: str = "python paper/wiring_replicates_rep.py"
    figure = "wiring_replicates_rep.png"
    pooled_with = "wiring_replicates"  # the summary counts both studies' six sets too
