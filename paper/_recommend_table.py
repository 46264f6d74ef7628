"""A tabular benchmark over logged training runs (issue 19 §2): the grid of real runs that the
recommendation baselines "run" by reading their logs.

A method that runs setting ``s`` for ``n`` optimizer steps with seed ``r`` reads the logged
end-to-end accuracy of run ``(s, r)`` at step ``n``; its cost is ``n`` optimizer steps (the
standard tabular benchmark of hyperparameter-optimisation methods on logged learning curves).
A diverged run (manifest ``status: "diverged"``) stopped training at ``diverged_step``: reading
it at or past that step costs only the steps it trained and gives accuracy 0.0 (a failed run,
the worst score), and its final accuracy is 0.0.

:class:`RunTable` is built from run folders with :meth:`RunTable.from_runs` (read by
``llm_runs.read_run``, labelled by ``llm_runs.observed_regime``) or from curves directly (tests).
:class:`Ledger` charges a method's steps against its budget and raises :class:`BudgetError`
rather than ever spending past it; a method returns a :class:`Pick`.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

import numpy as np

from paper._recommend_knobs import LR_STALENESS, Knob, cast
from paper._recommend_knobs import read as read_setting
from simulate import AgentmotifsError

#: A grid setting: its knobs' values in order (by default (``rl.lr``, ``rl.staleness``)).
Setting = tuple

#: Regime groups counted as unstable picks (names of ``simulate.REGIME_GROUPS``).
UNSTABLE_GROUPS = ("oscillating", "collapse")

__all__ = ["UNSTABLE_GROUPS", "BenchmarkError", "BudgetError", "Curve", "Ledger", "Pick",
           "RunTable", "Setting", "Trial", "best_setting", "regime_group"]  # fmt: skip


def best_setting(items: Sequence[tuple[Setting, float]]) -> Setting:
    """The setting of the largest value; the first one on ties."""
    return max(enumerate(items), key=lambda e: (e[1][1], -e[0]))[1][0]


class BenchmarkError(AgentmotifsError):
    """Bad input to the benchmark (unknown setting or seed, unusable run folder)."""


class BudgetError(BenchmarkError):
    """A method tried to spend more optimizer steps than its budget (or cannot start)."""


def regime_group(name: str) -> str:
    """A simulate regime name (as ``llm_runs.observed_regime`` returns) -> its group in
    ``simulate.REGIME_GROUPS`` (``converged``, ``oscillating``, ``collapse``, ...).

    Raises:
        BenchmarkError: ``name`` is not one of ``simulate.REGIME_NAMES``.
    """
    import simulate
    from simulate.common import REGIME_GROUPS

    codes = {v: int(k) for k, v in simulate.REGIME_NAMES.items()}
    if name not in codes:
        raise BenchmarkError(f"unknown regime {name!r}; expected one of {sorted(codes)}")
    return next(g for g, cs in REGIME_GROUPS.items() if codes[name] in cs)


@dataclasses.dataclass(frozen=True)
class Curve:
    """One run's logged end-to-end accuracy.

    Attributes:
        steps: Logged evaluation steps, starting at 0, strictly increasing.
        values: End-to-end accuracy at each step.
        regime: The run's observed regime (a ``simulate.REGIME_NAMES`` value).
        diverged_step: Steps trained before the run diverged, None for a run that finished.
    """

    steps: np.ndarray
    values: np.ndarray
    regime: str
    diverged_step: int | None = None

    def __post_init__(self) -> None:
        steps = np.asarray(self.steps, dtype=np.int64)
        values = np.asarray(self.values, dtype=np.float64)
        if steps.ndim != 1 or steps.shape != values.shape or len(steps) < 2:
            raise BenchmarkError("a curve needs matching 1-d steps and values, at least 2")
        if steps[0] != 0 or np.any(np.diff(steps) <= 0):
            raise BenchmarkError("curve steps must start at 0 and increase strictly")
        if not np.all(np.isfinite(values)):
            raise BenchmarkError("curve values must be finite")
        regime_group(self.regime)  # validates the name
        object.__setattr__(self, "steps", steps)
        object.__setattr__(self, "values", values)

    @property
    def final(self) -> float:
        """Final accuracy: the last logged value, or 0.0 for a diverged run."""
        return 0.0 if self.diverged_step is not None else float(self.values[-1])


@dataclasses.dataclass(frozen=True)
class Trial:
    """One thing a method evaluated (an entry of :attr:`Pick.trace`).

    Attributes:
        setting: The setting run.
        start: Step the run was resumed from (0 for a fresh run).
        reached: Last step read (the run was stopped, pruned or finished there).
        steps: Optimizer steps this evaluation cost.
        value: Accuracy read at ``reached`` (0.0 once diverged).
        note: What it was (``full``, ``pruned``, ``complete``, ``prefix``, ``continued``,
            ``pilot``, ``confirm``, ``stopped``, ``failed``).
        diverged: The run had diverged by ``reached`` (it trained only ``diverged_step``).
    """

    setting: Setting
    start: int
    reached: int
    steps: int
    value: float
    note: str
    diverged: bool = False


@dataclasses.dataclass(frozen=True)
class Pick:
    """A method's recommendation.

    Attributes:
        method: The method's name.
        setting: The chosen setting.
        steps: Optimizer steps spent (never more than ``budget``).
        budget: The budget in optimizer steps.
        seed: Training seed of the runs it read.
        trace: What it evaluated, in order.
        info: Method-specific extras (e.g. fitted parameters, the prefix length).
    """

    method: str
    setting: Setting
    steps: int
    budget: int
    seed: int
    trace: tuple[Trial, ...]
    info: Mapping[str, object] = dataclasses.field(default_factory=dict)


class RunTable:
    """Logged end-to-end accuracy curves of a grid of settings x seeds.

    Args:
        curves: ``{(setting, seed): Curve}``; every finished curve ends at the same step
            (the horizon).
        knobs: What a setting's values are (:mod:`_recommend_knobs`); default learning rate
            x policy lag.

    Raises:
        BenchmarkError: No curves, or finished curves of different lengths.
    """

    def __init__(
        self, curves: Mapping[tuple[Setting, int], Curve], knobs: Sequence[Knob] = LR_STALENESS
    ) -> None:
        if not curves:
            raise BenchmarkError("a run table needs at least one curve")
        self.knobs: tuple[Knob, ...] = tuple(knobs)
        self.curves: dict[tuple[Setting, int], Curve] = {
            (self.norm(s), int(r)): c for (s, r), c in curves.items()
        }
        self.settings: tuple[Setting, ...] = tuple(sorted({s for s, _ in self.curves}))
        self.seeds: tuple[int, ...] = tuple(sorted({r for _, r in self.curves}))
        ends = {int(c.steps[-1]) for c in self.curves.values() if c.diverged_step is None}
        if len(ends) > 1:
            raise BenchmarkError(f"finished curves end at different steps: {sorted(ends)}")
        longest = max(int(c.steps[-1]) for c in self.curves.values())
        self.horizon: int = ends.pop() if ends else longest
        grid = max(self.curves.values(), key=lambda c: len(c.steps)).steps
        #: Evaluation steps of the longest logged curve (where a method can stop a run).
        self.eval_steps: tuple[int, ...] = tuple(int(s) for s in grid if s <= self.horizon)

    def norm(self, setting: Sequence[object]) -> Setting:
        """``setting`` with each value in its knob's type."""
        return cast(self.knobs, setting)

    def as_dict(self, setting: Sequence[object]) -> dict[str, object]:
        """``{knob path: value}`` of a setting."""
        return dict(zip([k for k, _ in self.knobs], self.norm(setting), strict=True))

    @classmethod
    def from_runs(
        cls,
        folder: str | Path,
        *,
        seeds: Iterable[int] | None = None,
        knobs: Sequence[Knob] = LR_STALENESS,
    ) -> tuple[RunTable, list[str]]:
        """Read every finished or diverged run folder under ``folder``.

        The setting comes from the manifest's ``config`` fields named by ``knobs``,
        the seed from its ``seed``, the curve from the ``e2e`` rows (``llm_runs.read_run``),
        the regime from ``llm_runs.observed_regime``. Runs still being written
        (``status: "running"``) and runs of other seeds are skipped.

        Args:
            folder: The folder holding run folders (e.g. ``runs/regime_map``).
            seeds: Keep only these seeds (default: all).
            knobs: The config fields of a setting (default ``rl.lr``, ``rl.staleness``).

        Returns:
            The table, and the names of the run folders skipped with why.

        Raises:
            BenchmarkError: No usable run, two runs of one setting and seed, or a run
                without e2e rows or a knob's field in its config.
        """
        import llm_runs

        keep = None if seeds is None else {int(s) for s in seeds}
        curves: dict[tuple[Setting, int], Curve] = {}
        skipped: list[str] = []
        for run in sorted(p for p in Path(folder).iterdir() if (p / "manifest.json").is_file()):
            manifest = llm_runs.runlog.read_manifest(run)
            status, seed = manifest.get("status"), int(manifest["seed"])
            if keep is not None and seed not in keep:
                continue
            if not llm_runs.runlog.is_terminal(status):
                skipped.append(f"{run.name} (status {status})")
                continue
            log = llm_runs.read_run(run, strict=True)  # a finished run has no torn tail
            setting = read_setting(knobs, log.manifest.get("config", {}))
            if setting is None:
                names = ", ".join(k for k, _ in knobs)
                raise BenchmarkError(f"{run}: config lacks one of {names}")
            rows = log.e2e_rows
            if not rows:
                raise BenchmarkError(f"{run}: no e2e rows")
            key = (setting, seed)
            if key in curves:
                raise BenchmarkError(f"{run}: a second run of setting {key[0]}, seed {seed}")
            curves[key] = Curve(
                steps=np.array([r["step"] for r in rows]),
                values=np.array([r["accuracy"] for r in rows], dtype=float),
                regime=llm_runs.observed_regime(log)["regime"],
                diverged_step=log.diverged_step,
            )
        if not curves:
            raise BenchmarkError(f"{folder}: no finished or diverged run folders")
        return cls(curves, knobs), skipped

    def curve(self, setting: Setting, seed: int) -> Curve:
        """The curve of one run.

        Raises:
            BenchmarkError: No run of that setting and seed.
        """
        key = (self.norm(setting), int(seed))
        if key not in self.curves:
            raise BenchmarkError(f"no run of setting {setting} with seed {seed}")
        return self.curves[key]

    def read(self, setting: Setting, seed: int, n: int) -> tuple[float, int]:
        """Run ``setting`` with ``seed`` for ``n`` steps: (accuracy at ``n``, steps trained).

        Raises:
            BenchmarkError: ``n`` is not a logged step of that run (beyond a divergence any
                step up to the horizon is allowed).
        """
        c = self.curve(setting, seed)
        if c.diverged_step is not None and n >= c.diverged_step:
            return 0.0, int(c.diverged_step)
        hit = np.flatnonzero(c.steps == n)
        if hit.size == 0:
            raise BenchmarkError(f"step {n} is not logged for setting {setting}, seed {seed}")
        return float(c.values[hit[0]]), int(n)

    def final(self, setting: Setting, seed: int) -> float:
        """Final accuracy of one run (0.0 if it diverged)."""
        return self.curve(setting, seed).final

    def true_value(self, setting: Setting) -> float:
        """Mean final accuracy of ``setting`` over every seed present."""
        key = self.norm(setting)
        vals = [c.final for (s, _), c in self.curves.items() if s == key]
        if not vals:
            raise BenchmarkError(f"no run of setting {setting}")
        return float(np.mean(vals))

    def best_value(self) -> float:
        """The largest :meth:`true_value` on the grid."""
        return max(self.true_value(s) for s in self.settings)

    def regret(self, setting: Setting) -> float:
        """``best_value() - true_value(setting)`` (>= 0)."""
        return self.best_value() - self.true_value(setting)

    def group(self, setting: Setting, seed: int) -> str:
        """Regime group (``simulate.REGIME_GROUPS``) of one run's observed regime."""
        return regime_group(self.curve(setting, seed).regime)

    def unstable(self, setting: Setting, seed: int) -> bool:
        """Whether one run oscillated or collapsed: its observed regime's group is in
        :data:`UNSTABLE_GROUPS` (damped or sustained oscillation, collapse; a diverged run is
        a collapse)."""
        return self.group(setting, seed) in UNSTABLE_GROUPS

    def settings_of(self, seed: int) -> tuple[Setting, ...]:
        """Settings with a run of ``seed``, sorted."""
        return tuple(s for s in self.settings if (s, int(seed)) in self.curves)

    def corners(self) -> tuple[Setting, ...]:
        """The grid's corner settings: the lowest and highest value of every ordered knob, in
        every combination, for every value of a ``cat`` knob."""
        ends = []
        for i, (_, kind) in enumerate(self.knobs):
            vals = sorted({s[i] for s in self.settings})
            ends.append(vals if kind == "cat" else [vals[0], vals[-1]])
        out = list(itertools.product(*ends))
        return tuple(dict.fromkeys(s for s in out if s in self.settings))


class Ledger:
    """Steps spent by one method, against its budget, on one seed's runs.

    Args:
        table: The runs.
        seed: Training seed of every run read.
        budget: Optimizer steps allowed.
    """

    def __init__(self, table: RunTable, seed: int, budget: int) -> None:
        if int(budget) <= 0:
            raise BudgetError(f"budget_steps must be positive, got {budget}")
        if int(seed) not in table.seeds:
            raise BenchmarkError(f"seed {seed} not in the table (seeds {list(table.seeds)})")
        self.table, self.seed, self.budget = table, int(seed), int(budget)
        self.spent = 0
        self.trace: list[Trial] = []

    @property
    def left(self) -> int:
        """Steps still available."""
        return self.budget - self.spent

    def run(self, setting: Setting, until: int, *, start: int = 0, note: str = "full") -> Trial:
        """Run (or resume from ``start``) ``setting`` to step ``until``; charge the steps.

        Returns:
            The :class:`Trial` recorded (its ``value`` is the accuracy read at ``until``).

        Raises:
            BudgetError: The steps would exceed the budget (nothing is charged).
        """
        value, trained = self.table.read(setting, self.seed, until)
        cost = max(0, trained - start)
        if cost > self.left:
            raise BudgetError(f"{cost} steps asked, {self.left} of {self.budget} left")
        self.spent += cost
        setting = self.table.norm(setting)
        self.trace.append(Trial(setting, start, until, cost, value, note, trained < until))
        return self.trace[-1]

    def merge(self, since: int, note: str) -> Trial:
        """Replace the trace entries from index ``since`` (consecutive segments of one run)
        by one :class:`Trial` labelled ``note``; returns it."""
        parts = self.trace[since:]
        if not parts:
            raise BenchmarkError("nothing to merge")
        last = parts[-1]
        one = Trial(
            last.setting, parts[0].start, last.reached, sum(t.steps for t in parts),
            last.value, note, last.diverged,
        )  # fmt: skip
        self.trace[since:] = [one]
        return one

    def pick(self, method: str, setting: Setting, **info: object) -> Pick:
        """The :class:`Pick` of ``setting`` with this ledger's spend and trace."""
        if self.spent > self.budget:  # unreachable through run(); a guard for edits
            raise BudgetError(f"{self.spent} steps spent over a budget of {self.budget}")
        return Pick(
            method=method,
            setting=self.table.norm(setting),
            steps=self.spent,
            budget=self.budget,
            seed=self.seed,
            trace=tuple(self.trace),
            info=info,
        )
