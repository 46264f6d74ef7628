"""A replication of ``paper/wiring_replicates.py`` on the two types whose edge into Z is the
hardest to read (issue 29 §4).

That study (sets 8 and 9 pooled, 24 runs) read two or more signs in all four of its sets by
its primary analysis, the se stratified by condition and agent, and in none with a Student-t
band at that se's Satterthwaite degrees of freedom (1 to 2.6: with two seeds a stratum, the
se rests on few of them). Of its sets, C1 and I1 are those whose Y -> Z sign hides behind the
types that differ from the truth only there (I1-AND was 5.1 nats behind C1, C1-AND 9.6
behind I1). This replication repeats its design and analysis, unchanged, on new seeds of
those two types, stored before the runs trained.

Design (``config.json``): ``paper/wiring_replicates.py``'s, at sets 10 and 11 (seeds 3100,
3102, 3103 and 3110, 3112, 3113), types C1 and I1 only: 12 runs, two 6-run sets, each fitted
with the same command and read by the same four se (primary: stratified by condition and
agent, band 2). Hypothesis: as that study's, the truth first or indistinguishable, no wrong
sign and two or more signs in both sets. Two sets: what trains and fits in about 35 minutes
on two cores, in the session that read the first four.

Phases (each resumable): ``restore``, ``wiring`` (training), ``fit``, ``summary``.

Usage: python -m paper.wiring_replicates_rep [--phase restore|wiring|fit|summary|all]
       [--runs runs/wiring_replicates_rep] [--out paper/results/wiring_replicates_rep]
       [--workers 2] [--code DIR] [--quick]
"""

from __future__ import annotations

from paper._wiring_replicates import QUICK, ReplicationDesign
from paper._wiring_threshold import read_back_main


def main(argv: list[str] | None = None) -> int:
    return read_back_main(
        argv,
        design=ReplicationDesign,
        quick=QUICK,
        name="wiring_replicates_rep",
        description="A replication of the wiring read back from replicated runs (C1, I1).",
        summary="paper._wiring_replicates:summary_phase",
    )


if __name__ == "__main__":
    raise SystemExit(main())
