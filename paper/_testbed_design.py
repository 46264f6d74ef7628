"""The testbed study's fixed design (driver: ``python -m paper.testbed_study``; the design
and every measure are stated there): its runs by phase, their configs and folder names."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

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
