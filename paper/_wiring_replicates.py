"""The wiring read back from replicated runs, the se of each difference from the replicates
(issue 29 §4).

In every read-back so far a set held four runs, each in its own condition (``w = 0``,
``w = 0.9``, X knocked down, Y knocked down), and the se of an elpd difference came from its
sums per run and agent, the 12 blocks taken as exchangeable draws. Read after
``paper/wiring_readout.py``'s runs (PSIS-LOO of its saved fits,
``paper/results/wiring_replicates/exploration/``): the evidence that separates
the truth from a type of another sign sits on one agent's curve in one condition, most often
Z's in the ``w = 0`` run (median 6.4 nats against the types that differ only in Y -> Z, 1.3 to
1.8 in the other runs). Twelve blocks of which one or two carry the difference give a se as
large as the difference, whether or not a replicate would repeat it: a set has no replicate
of any condition, so the blocked se cannot tell a condition that separates two types from
noise. Here each condition is run at two seeds, and the se of a difference is that of its
sums per run and agent *stratified by condition and agent*: ``sqrt(sum_s B_s var_s)`` over
the strata ``s`` (runs whose configuration is the same but for its seed, and one agent), with
``B_s`` = 2 blocks each (``calibrate fit --dse-replicates``; docs/model.md). It measures how
much the evidence varies between seeds of the same condition, which is what a new set would
redraw, and does not count the designed differences between conditions and agents as
noise.

Design (``config.json``, stored before the first run trained; committed before
``--dse-replicates`` existed, which is built to the formula above before any fit reads these
runs):

- Runs: the readout read-back's (every edge ``K`` 0.6, ``n`` 10; 200 steps), per type (C1,
  I1, C2, I2) one set of six: ``w = 0``, ``w = 0.9`` and ``w = 0.9`` with X knocked down at
  steps 30-60, each at two seeds (the early family's runs at sets 8 and 9, seeds 3080, 3082,
  3083 and 3090, 3092, 3093; the early Y knock-downs left out: they carried the least
  evidence). 24 runs; the four types share seeds, run for run.
- Analysis: ``calibrate fit --motif auto --gate AND --method laplace --edge-weights
  --pipeline X->Y,Y->Z --regulators logged-gates --pulses --dse-blocks --readout greedy
  --dse-replicates`` on each set's six runs. Primary: the indistinguishable set by the se
  stratified by condition and agent (``dse``); secondary: the unstratified se per run and
  agent (``dse_blocks``) and the pointwise se (``dse_points``) of the same fits, and (added
  with the unbiased stratum variances, ddof 1, before any fit read these runs) the primary se
  with a Student-t band at its Satterthwaite degrees of freedom (``dse_df``) in place of 2,
  the same one-sided level (97.7 %): with two seeds a stratum the se is itself uncertain.
- Measures and goal as issue 29 §4 states them; the share of sets with two or more signs with
  its 95 % Clopper-Pearson interval. One set per type (4 sets, "most" is 3 or 4): 24 runs and
  four 6-run fits are what trains and fits in about an hour on two cores. No power
  calculation: the exploratory read of the readout read-back's 4-run sets (stratified by
  agent only; ``exploration/explore.json``) read two signs in 3 of 8 sets, and there is no
  spread of a per-set outcome under this design to base one on.

Phases (each resumable): ``restore``, ``wiring`` (training), ``fit``, ``summary``.

Usage: python -m paper.wiring_replicates [--phase restore|wiring|fit|summary|all]
       [--runs runs/wiring_replicates] [--out paper/results/wiring_replicates] [--workers 2]
       [--code DIR] [--quick]
"""

from __future__ import annotations

import copy
import dataclasses
from pathlib import Path
from typing import Any

from paper.wiring_confirm import _early_at
from paper.wiring_readout import QUICK as READOUT_QUICK
from paper.wiring_readout import READOUT_ARGS, ReadoutDesign
from paper.wiring_threshold import read_back_main

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
    from paper import wiring_threshold
    from paper.wiring_confirm import pointwise_read
    from paper.wiring_floor import family_measures
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


def main(argv: list[str] | None = None) -> int:
    return read_back_main(
        argv,
        design=ReplicatesDesign,
        quick=QUICK,
        name="wiring_replicates",
        description="The wiring read back from replicated runs (se from the replicates).",
        summary="paper.wiring_replicates:summary_phase",
    )


if __name__ == "__main__":
    raise SystemExit(main())
