"""The testbed study (issue 29): on the three-step tasks, does every role learn, does every
edge act, do the eight FFL types differ in training, and can the wiring be read back from
real logs?

Design (fixed before any run; stored in ``config.json``):

- Tiny base, the default training config (REINFORCE, batch 32, ``rl.lr`` 1e-3, coupling
  edges of weight 0.9, K 0.5, n 4), ``steps`` optimizer steps, evaluation every
  ``eval_every`` steps on ``n_probe`` probes per role and ``n_test`` end-to-end problems.
- ``rise``: C1-AND on every task of ``tasks``, ``seeds``. Measures: each role's rise (the
  mean of its last three evaluations minus its step-0 competence) and its highest
  competence before step ``early_step`` (goal: rise >= 0.25, early max <= ceiling - 0.05).
- ``power``: the seed count of the later phases from the rise runs' spread: the smallest n
  with power ``power`` (two-sided alpha 0.05, paired t approximation) to detect a
  difference of ``effect`` (0.05) in a target's area under the curve, at least ``min_seeds``,
  at most ``max_seeds``; written to ``power.json`` once (refused if it exists).
- ``edges`` (task ``edge_task``): from C1-AND, each edge of ``edges`` in turn, with each
  mechanism of ``mechanisms``, is activating, repressing, or cut (removed from the spec;
  the cut run is shared by the mechanisms), every other edge as in the default. Measures
  on the edge's target: area under A_target(t) (trapezoid, divided by the run length) and
  the first step A_target >= ``level`` (censored at the last step); contrasts act - rep
  (the sign's effect: positive means the edge acts in the direction of its sign),
  act - cut and rep - cut, paired by seed, with 95 % t intervals.
- ``types``: the eight FFL types x AND on ``edge_task``. A permutation test of curve
  distances (the L2 distance between two types' mean curves of A_Y, A_Z and end-to-end
  accuracy; labels permuted among the two types' runs, ``permutations`` draws; Holm's
  correction over the 28 pairs) and what distinguishes types: final level, steps to
  ``level``, largest transient (peak minus final).
- ``wiring``: for each type of ``wiring_types`` and each set seed of ``wiring_sets``, runs at
  the learning rates ``wiring_lrs`` (a family through a link); ``calibrate fit --motif auto
  --gate AND`` with growth and forgetting linked to ``rl.lr``, Laplace. Measures: the rank
  of the true type, whether it is in ``indistinguishable``, which signs are identified and
  whether each is correct.

Design 2 (2026-12-02, fixed before its runs; design 1's results are kept in ``design1/``):
design 1's rise runs showed every ``math`` role fixing its step within ~50 steps whatever its
regulation (Y 0.86 by step 50 at a fifth of the rate) while X, at 0.05 of ``rl.lr``, stayed
below the edges' threshold K until step ~60, and the edge controllers' EMA started from 0 (no
bias correction), so every activating edge throttled its target at the start for a reason
unrelated to its source. Design 2 trains on the corrected controllers (bias-corrected EMA)
and the ``math`` task's new default rates (X 0.15, Y 0.06, Z 0.1 of ``rl.lr``), chosen from
single-seed probes (seed 99, not a study seed; X 0.15 with Y, Z at 1 or 0.2 left the
targets learning while X crossed K). ``rag`` is unchanged.

Design 2, revision 1 (2026-12-03, fixed when the ``types`` runs had one seed of five and no
types analysis had been run): with 5 seeds per type a two-type permutation test cannot go
below p = 2/C(10, 5) = 0.008, and Holm over the 28 pairs needs p < 0.0018 for the first
rejection, so the stated test could never find a difference. ``type_test`` ``omnibus+BH``:
first an omnibus permutation test over all eight types (statistic: the sum over types of
n_type x the squared distance of the type's mean curve from the grand mean; labels permuted
among all runs), then the pairs with Benjamini-Hochberg's false-discovery control at 5 %
(Holm's adjusted p is still reported, with the smallest p a pair's test can reach).

Phases (each resumable; a finished run is never retrained): ``restore`` (copies the logs of
finished runs archived under ``<out>/runs`` into ``--runs`` where missing, so a new checkout
trains only what is left), ``rise``, ``power``, ``edges``, ``types``, ``wiring``, ``fit``
(the wiring fits), ``summary`` (``summary.json``, ``table.md``, ``testbed.png``, and the
archive of every finished run's log; it summarises whatever runs have finished and lists
the missing ones).

Usage: python paper/testbed_study.py
       [--phase restore|rise|power|edges|types|wiring|fit|summary|all]
       [--runs runs/testbed] [--out paper/results/testbed] [--workers 2] [--code DIR]
       [--quick]
"""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from _study import study_main  # noqa: E402

MOTIFS = ["C1", "C2", "C3", "C4", "I1", "I2", "I3", "I4"]

#: (task, motif, edge override or "", sign of the override (1, -1, 0 = cut), mechanism, lr,
#: seed)
Job = tuple[str, str, str, int, str, float, int]


@dataclasses.dataclass
class StudyConfig:
    """The study's fixed design (see the module docstring)."""

    design: int = 2
    tasks: list[str] = dataclasses.field(default_factory=lambda: ["math", "rag"])
    seeds: list[int] = dataclasses.field(default_factory=lambda: [0, 1, 2, 3, 4])
    steps: int = 200
    eval_every: int = 10
    n_probe: int = 64
    n_test: int = 128
    preset: str = "tiny"
    lr: float = 1e-3
    early_step: int = 50
    min_rise: float = 0.25
    ceiling_gap: float = 0.05
    edge_task: str = "math"
    edges: list[str] = dataclasses.field(default_factory=lambda: ["X->Y", "X->Z", "Y->Z"])
    mechanisms: list[str] = dataclasses.field(
        default_factory=lambda: ["coupling", "budget", "credit"]
    )
    level: float = 0.8
    effect: float = 0.05
    power: float = 0.8
    min_seeds: int = 5
    max_seeds: int = 10
    motifs: list[str] = dataclasses.field(default_factory=lambda: list(MOTIFS))
    permutations: int = 2000
    type_test: str = "omnibus+BH"
    wiring_types: list[str] = dataclasses.field(default_factory=lambda: ["C1", "I1", "C2", "I2"])
    wiring_sets: list[int] = dataclasses.field(default_factory=lambda: [0, 1])
    wiring_lrs: list[float] = dataclasses.field(default_factory=lambda: [5e-4, 1e-3, 2e-3])

    def bind(self, out: Path) -> None:
        """Where the study's results live (``power.json`` decides the later seeds)."""
        self._out = Path(out)

    def phase_seeds(self) -> list[int]:
        """Seeds of the ``edges`` and ``types`` phases, from ``power.json``.

        Raises:
            RuntimeError: ``power.json`` is missing (run ``--phase power`` first).
        """
        path = self._out / "power.json"
        if not path.is_file():
            raise RuntimeError(f"{path} is missing: run --phase power after the rise runs")
        return list(range(int(json.loads(path.read_text())["seeds"])))

    def jobs(self, phase: str) -> list[Job]:
        """The runs of a training phase (``rise``, ``edges``, ``types`` or ``wiring``)."""
        t, lr = self.edge_task, self.lr
        if phase == "rise":
            return [(k, "C1", "", 1, "coupling", lr, s) for k in self.tasks for s in self.seeds]
        if phase == "edges":
            out: list[Job] = []
            for s in self.phase_seeds():
                for e in self.edges:
                    out.append((t, "C1", e, 0, "coupling", lr, s))
                    for m in self.mechanisms:
                        out += [(t, "C1", e, sign, m, lr, s) for sign in (1, -1)]
            jobs = list(dict.fromkeys(canonical(j) for j in out))
            # the default mechanism and the cuts first, then the others in the design's
            # order, each seed by seed: an interrupted phase has whole comparisons done
            rank = {m: i for i, m in enumerate(self.mechanisms)}
            return sorted(jobs, key=lambda j: (0 if j[3] == 0 else rank[j[4]], j[6]))
        if phase == "types":
            seeds = self.phase_seeds()
            return [(t, m, "", 1, "coupling", lr, s) for s in seeds for m in self.motifs]
        if phase == "wiring":
            return [
                (t, m, "", 1, "coupling", x, 1000 + 10 * k + i)
                for m in self.wiring_types
                for k in self.wiring_sets
                for i, x in enumerate(self.wiring_lrs)
            ]
        raise ValueError(f"not a training phase: {phase!r}")

    def train_config(
        self, task: str, motif: str, edge: str, sign: int, mech: str, lr: float, seed: int
    ) -> dict[str, Any]:
        """The llm_runs config of one run."""
        from simulate.spec import ffl_spec

        network: dict[str, Any] = {"motif": motif, "gate": "AND"}
        if edge:
            spec = ffl_spec(motif, "AND", K=0.5, n=4.0).to_dict()
            spec["name"] = f"{motif}-AND-{edge}{'+' if sign > 0 else '-' if sign < 0 else 'cut'}"
            src, dst = edge.split("->")
            kept = []
            for e in spec["edges"]:
                if (e["source"], e["target"]) == (src, dst):
                    if sign == 0:
                        continue
                    e["sign"] = sign
                kept.append(e)
            spec["edges"] = kept
            regulators = [e["target"] for e in kept]
            spec["gates"] = {k: g for k, g in spec["gates"].items() if regulators.count(k) >= 2}
            network = {"spec": spec, "edges": {edge: {"mechanism": mech}}}
        return {
            "task": {"name": task, "n_probe": self.n_probe, "n_test": self.n_test},
            "model": {"preset": self.preset},
            "network": network,
            "rl": {"lr": lr},
            "steps": self.steps,
            "eval_every": self.eval_every,
            "ckpt_every": 50 if self.steps >= 100 else self.eval_every,
            "seed": seed,
            "threads": 1,
            "name": run_name(task, motif, edge, sign, mech, lr, seed),
        }


def canonical(job: Job) -> Job:
    """The default run's job for an override that changes nothing (C1's edge activating
    through the default mechanism), so that such runs are trained once."""
    task, motif, edge, sign, mech, lr, seed = job
    if edge and motif == "C1" and sign == 1 and mech == "coupling":
        return (task, motif, "", 1, "coupling", lr, seed)
    return job


def run_name(task: str, motif: str, edge: str, sign: int, mech: str, lr: float, seed: int) -> str:
    """A run's folder name (the default run of a task, motif, lr and seed has no edge part)."""
    base = f"{task}_{motif}_lr{lr:g}_s{seed}"
    if not edge:
        return base
    tag = {1: "act", -1: "rep", 0: "cut"}[sign]
    e = edge.replace("->", "")
    return f"{base}_{e}{tag}" + ("" if sign == 0 else f"_{mech}")


QUICK = {"tasks": ["math"], "seeds": [0, 1], "steps": 8, "eval_every": 2, "n_probe": 8,
         "n_test": 8, "preset": "micro", "early_step": 4, "edges": ["Y->Z"],
         "mechanisms": ["coupling", "credit"], "min_seeds": 2, "max_seeds": 2,
         "motifs": ["C1", "I1"], "permutations": 50, "wiring_types": ["C1"],
         "wiring_sets": [0], "lr": 2e-3, "wiring_lrs": [1e-3, 4e-3]}  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    return study_main(
        argv,
        description="The testbed study (issue 29).",
        design=StudyConfig,
        quick=QUICK,
        run_name=run_name,
        phases=["restore", "rise", "power", "edges", "types", "wiring", "fit", "summary"],
        gated=None,
        default_runs="runs/testbed",
        default_out="paper/results/testbed",
        steps={
            "restore": "_testbed_analysis:restore_phase",
            "power": "_testbed_analysis:power_phase",
            "fit": "_testbed_analysis:fit_wiring",
            "summary": "_testbed_analysis:summarise",
        },
    )


if __name__ == "__main__":
    raise SystemExit(main())
