"""The library of ``python -m paper.archive.wiring_logged`` (its design, phases and summary; the
driver, paper/archive/wiring_logged.py, states the design): kept apart so that other studies of
its family import this helper, never the study."""

from __future__ import annotations

import dataclasses
import json
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from paper._wiring_early import QUICK as EARLY_QUICK
from paper._wiring_early import EarlyDesign
from paper._wiring_early import run_name as early_run_name
from paper._wiring_weights import WeightDesign
from paper._wiring_weights import run_name as weight_run_name

ROOT = Path(__file__).resolve().parents[1]

FAMILIES = ("weights", "x", "early")
#: The earlier fits of each family's sets: (summary, the key of its sets' family or None).
EARLIER = {"weights": ("wiring_weights", None), "x": ("wiring_floor", "_x"),
           "early": ("wiring_early", None)}  # fmt: skip


@dataclasses.dataclass
class LoggedDesign:
    """The re-analysis' fixed design (see the module docstring)."""

    #: The early Y knock-down's design: the x and early families' runs, through it.
    early: dict[str, Any] = dataclasses.field(default_factory=lambda: dataclasses.asdict(
        EarlyDesign()))  # fmt: skip
    #: The weight family's design.
    weights: dict[str, Any] = dataclasses.field(default_factory=lambda: dataclasses.asdict(
        WeightDesign()))  # fmt: skip
    #: Where the committed runs are read (None: trained here, ``--quick``).
    weights_runs_from: str | None = "paper/results/wiring_weights/runs"
    early_runs_from: str | None = "paper/results/wiring_early/runs"
    families: list[str] = dataclasses.field(default_factory=lambda: list(FAMILIES))
    fit_args: list[str] = dataclasses.field(default_factory=lambda: [
        "--motif", "auto", "--gate", "AND", "--method", "laplace", "--edge-weights",
        "--pipeline", "X->Y,Y->Z", "--regulators", "logged"])  # fmt: skip
    hypothesis: str = (
        "with the regulators the runs applied (the logged training competence, the runs' K "
        "and n), each family keeps the truth first or indistinguishable in at least as many "
        "sets as its earlier fits and reads no wrong sign; X->Y's sign is identified in most "
        "sets of the weight family, whose w = 0 run shows what Y does without the designed "
        "edge"
    )
    goal: str = (
        "issue 29 §4: the truth always first or indistinguishable from the first, no "
        "identified sign ever wrong, >= 2 of the 3 edge signs identified in most sets"
    )
    #: The stored design's field, frozen with it (now ``python -m paper.archive.wiring_logged``).
    command: str = "python paper/wiring_logged.py"
    #: Quote the earlier fits of the same sets (a class attribute: not part of the design).
    quote_earlier = True
    figure = "wiring_logged.png"  # the summary's figure (a class attribute, like the above)

    def _early(self) -> EarlyDesign:
        return EarlyDesign(**self.early)

    def _weights(self) -> WeightDesign:
        return WeightDesign(**self.weights)

    def sets(self) -> dict[str, list[tuple]]:
        """The runs of each set, by its name ``<type>_set<k>_<family>``, families in order."""
        out: dict[str, list[tuple]] = {}
        for fam in self.families:
            src = self._weights().sets() if fam == "weights" else self._early().sets()
            for name, jobs in src.items():
                out[f"{name}_{fam}"] = list(jobs[:3] if fam == "x" else jobs)
        return out

    def jobs(self, phase: str) -> list[tuple]:
        """The runs trained here: none, unless the committed runs are not read (``--quick``)."""
        if phase != "wiring":
            raise ValueError(f"not a training phase: {phase!r}")
        out = []
        if "weights" in self.families and self.weights_runs_from is None:
            out += self._weights().jobs("wiring")
        if {"x", "early"} & set(self.families) and self.early_runs_from is None:
            out += self._early().jobs("wiring")
        return out

    def train_config(self, *job: Any) -> dict[str, Any]:
        """The llm_runs config of one run (its own study's)."""
        if len(job) == 4:
            return self._weights().train_config(*job)
        return self._early().train_config(*job)

    def run_path(self, runs: Path, job: tuple) -> Path:
        """Where a set's run is read: its archive, or this study's runs (``--quick``)."""
        if len(job) == 4:
            base = runs if self.weights_runs_from is None else ROOT / self.weights_runs_from
            return base / weight_run_name(*job)
        if self.early_runs_from is None:
            return runs / early_run_name(*job)
        if job[2] == "pulseYe":
            return ROOT / self.early_runs_from / early_run_name(*job)
        return self._early().run_path(runs, job)

    def args(self, name: str) -> list[str]:
        """The fit's options for set ``name`` (pulses in the knock-down families)."""
        return [*self.fit_args, *(["--pulses"] if not name.endswith("_weights") else [])]


def run_name(*job: Any) -> str:
    return weight_run_name(*job) if len(job) == 4 else early_run_name(*job)


def fit_phase(cfg: LoggedDesign, runs: Path, out: Path) -> None:
    """Fit every set whose runs have all finished, two at a time on two cores (a set with a
    ``selection.json`` is kept)."""
    from calibrate import fit_runs
    from paper._study_runs import run_curves

    failed = threading.Event()

    def one(item: tuple[str, list[tuple]]) -> None:
        name, jobs = item
        fit, paths = out / "wiring" / name, [cfg.run_path(runs, j) for j in jobs]
        if failed.is_set() or (fit / "selection.json").is_file():
            return
        if not all((p / "manifest.json").is_file() and run_curves(p) is not None for p in paths):
            print(f"  {name}: runs not finished, skipped", flush=True)
            return
        try:
            fit_runs(paths, fit, args=cfg.args(name), log=runs / "logs" / f"fit_{name}.log")
        except BaseException:
            failed.set()
            raise
        print(f"  {name}: fitted", flush=True)

    with ThreadPoolExecutor(max_workers=min(2, os.cpu_count() or 1)) as ex:
        list(ex.map(one, cfg.sets().items()))


def _earlier(fam: str) -> dict[str, Any] | None:
    """The goal's counts of the same sets under their earlier fits (None: not committed)."""
    from paper._wiring_floor import family_measures

    study, suffix = EARLIER[fam]
    f = ROOT / "paper" / "results" / study / "summary.json"
    if not f.is_file():
        return None
    sets = json.loads(f.read_text())["wiring_identification"]["sets"]
    if suffix is not None:
        sets = {n.removesuffix(suffix): v for n, v in sets.items() if n.endswith(suffix)}
    return {**family_measures(sets, None), "ranks": {n: v["rank"] for n, v in sets.items()}}


def summary_phase(cfg: LoggedDesign, runs: Path, out: Path) -> dict[str, Any]:
    """``summary.json`` (``wiring_identification``; ``by_family``, the goal's counts per
    family with the earlier fits' counts of the same sets), ``table.md`` and the figure
    (``wiring_logged.png``)."""
    from paper._wiring_floor import family_measures
    from paper._wiring_read import readback_summary

    def by_family(summary: dict[str, Any]) -> dict[str, Any]:
        sets = summary["wiring_identification"].get("sets", {})
        fams = {}
        for fam in cfg.families:
            mine = {n: s for n, s in sets.items() if n.endswith(f"_{fam}")}
            m = family_measures(mine, out)
            m["ranks"] = {n.removesuffix(f"_{fam}"): s["rank"] for n, s in mine.items()}
            fams[fam] = {"logged": m, "earlier": _earlier(fam) if cfg.quote_earlier else None}
        return {"by_family": fams}

    summary = readback_summary(cfg, runs, out, {}, by_family)
    _figure(summary, out / cfg.figure)
    return summary


def _figure(summary: dict[str, Any], path: Path) -> None:
    """Rank of the true type per set (1 = first), earlier fits against logged regulators,
    one panel per family; filled where the truth is first or indistinguishable."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from simulate.common import save_figure

    fams = summary["by_family"]
    sets = summary["wiring_identification"].get("sets", {})
    fig, axes = plt.subplots(1, len(fams), figsize=(4.2 * len(fams), 3.4), squeeze=False)
    for ax, (fam, d) in zip(axes[0], fams.items(), strict=True):
        names = sorted(d["logged"]["ranks"])
        before = (d["earlier"] or {}).get("ranks", {})
        x = range(len(names))
        ax.plot(x, [before.get(n, float("nan")) for n in names], "s", mfc="none", c="0.5",
                label="earlier fits")  # fmt: skip
        ok = [sets[f"{n}_{fam}"]["rank"] == 1 or sets[f"{n}_{fam}"]["in_indistinguishable"]
              for n in names]  # fmt: skip
        ranks = [d["logged"]["ranks"][n] for n in names]
        ax.scatter(x, ranks, c=["C0" if o else "white" for o in ok], edgecolors="C0", zorder=3,
                   label="logged regulators (filled: first or indistinguishable)")  # fmt: skip
        ax.set_xticks(list(x), [n.replace("_set", " s") for n in names], rotation=45)
        ax.set_title(f"family: {fam}")
        ax.set_ylabel("rank of the true type (of 16)")
        ax.set_ylim(16.5, 0.5)
        ax.set_yticks([1, 4, 8, 12, 16])
    axes[0][0].legend(fontsize=7, loc="lower left")
    fig.tight_layout()
    save_figure(fig, path, dpi=120)
    plt.close(fig)


#: ``--quick``: the early knock-down's toy runs, trained here, fitted with two candidates.
QUICK_FIT = ["--motif", "C1,C2", "--gate", "AND", "--method", "laplace", "--edge-weights",
             "--pipeline", "X->Y,Y->Z", "--regulators", "logged"]  # fmt: skip
QUICK = {"early": {**dataclasses.asdict(EarlyDesign()), **EARLY_QUICK},
         "weights_runs_from": None, "early_runs_from": None, "families": ["x", "early"],
         "fit_args": QUICK_FIT}  # fmt: skip
