"""Task interface, splits and probes. (``math`` lives in ``_math.py``, ``rag`` in ``_rag.py``;
:func:`llm_runs.get_task` in ``_task_registry.py``.)

A task is a pipeline of roles (default X → Y → Z). To add one, subclass :class:`Task` and
implement four methods; everything else (splits, probes, pretraining text) is generic:

- ``draw(rng, shifted) -> Problem``: one random problem (``key`` decides its split);
- ``prompt(role, problem, upstream) -> str``: the role's prompt given the *actual* outputs
  of the upstream roles (``upstream[role]`` strings), fixed width per role is advisable;
- ``local_gold(role, problem, upstream) -> str | None``: the correct output of ``role``
  given those upstream outputs (its own verifiable skill), None if undefined;
- ``pretrain_lines(problem, rng) -> list[str]``: base-model pretraining text from one
  problem: one-step facts, plus role-format demonstrations from :meth:`Task.demo`.

``demo(role, problem, upstream, rng)`` is an *imperfect* demonstration of the role: the
correct output except that, with probability ``p_bug``, a systematic misconception (math:
dropped carries, copying the candidate; rag: positional retrieval, copying).
The base, pretrained on such text, greedily follows the misconception where it applies:
every role's competence starts well below its ceiling, the correct behaviour keeps some of
the sampling mass, and RL on verifiable rewards has something real to fix. In the default
tasks every role performs one step of a three-step chain on its upstream agent's actual
output, so each role has a skill of its own and its learning signal depends on what its
upstream agents produce. (The first testbed, kept as ``math-v1``/``rag-v1``, gave the last
role a check-and-copy job that it never learned.)

``verify(problem, answer)`` (end-to-end reward in [0, 1]) defaults to exact match of the last
role's output with ``problem.answer``; override it for e.g. unit-test rewards. Role outputs
are ``out_len[role]`` characters, generated greedily at evaluation.
"""

from __future__ import annotations

import abc
import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, TypeVar

import numpy as np

__all__ = ["TASKS", "Probe", "Problem", "Task", "register_task"]

SPLITS = ("train", "probe", "test")


@dataclass(frozen=True)
class Problem:
    """One task instance.

    Attributes:
        key: Identity used for the split (problems with one key share a split).
        data: Task-specific fields (operands, context, ...).
        gold: Correct output of every role given correct upstream outputs.
        answer: The final answer (the last role's gold output).
        shifted: Drawn from the shifted distribution.
    """

    key: str
    data: Mapping[str, Any]
    gold: Mapping[str, str]
    answer: str
    shifted: bool = False


@dataclass(frozen=True)
class Probe:
    """A fixed probe item for one role: prompt built from gold (or corrupted) upstream."""

    role: str
    problem: Problem
    upstream: Mapping[str, str] = field(default_factory=dict)
    target: str = ""


def split_of(key: str, *, probe_frac: float = 0.05, test_frac: float = 0.10) -> str:
    """Deterministic split of a problem key: ``probe``, ``test`` or ``train``."""
    u = int.from_bytes(hashlib.sha1(key.encode()).digest()[:8], "big") / 2**64
    if u < probe_frac:
        return "probe"
    if u < probe_frac + test_frac:
        return "test"
    return "train"


class Task(abc.ABC):
    """Abstract base of a task; see the module docstring for the interface (a subclass
    that leaves one of the four methods unimplemented cannot be instantiated).

    Args:
        seed: Seed of the task's fixed content (e.g. the knowledge base).
        roles: Role names in pipeline order (the network's nodes, mapped in order).
    """

    name = "task"
    default_roles: tuple[str, ...] = ("X", "Y", "Z")
    OUT_LEN: ClassVar[dict[str, int]] = {}
    #: Corrupt the second-to-last role's gold output in half the last role's probes (the
    #: check-and-refine critic of the v1 tasks).
    PROBE_CORRUPT_LAST: ClassVar[bool] = False
    #: Default per-role multipliers of ``rl.lr`` (default role names; ``rl.lr_scale``
    #: entries override them).
    LR_SCALE: ClassVar[dict[str, float]] = {}
    #: Whether prompts are user turns of the base's chat template (an instruct model's
    #: format; :meth:`llm_runs._tokenizer.HFTokenizer.use_chat`), not plain text.
    chat: ClassVar[bool] = False

    def __init__(
        self, *, seed: int = 0, roles: tuple[str, ...] | None = None, p_bug: float = 0.6
    ) -> None:
        if not 0.0 <= float(p_bug) <= 1.0:
            raise ValueError(f"p_bug must be in [0, 1], got {p_bug!r}")
        self.p_bug = float(p_bug)
        self.seed = int(seed)
        roles = tuple(roles) if roles is not None else self.default_roles
        if len(roles) != len(self.default_roles):
            raise ValueError(
                f"task {self.name!r} has {len(self.default_roles)} roles, got {list(roles)}"
            )
        self._rename = dict(zip(self.default_roles, roles, strict=True))
        self.roles: tuple[str, ...] = roles
        self.out_len = {self._rename[r]: n for r, n in type(self).OUT_LEN.items()}
        self.lr_scale = {self._rename[r]: v for r, v in type(self).LR_SCALE.items()}

    def canon(self, role: str) -> str:
        """Default role name (X/Y/Z) of a (possibly renamed) role."""
        for k, v in self._rename.items():
            if v == role:
                return k
        raise KeyError(f"unknown role {role!r}; roles are {list(self.roles)}")

    # -- to implement -------------------------------------------------------------------
    @abc.abstractmethod
    def draw(self, rng: np.random.Generator, shifted: bool) -> Problem:
        """One random problem (its ``key`` decides its split)."""

    @abc.abstractmethod
    def prompt(self, role: str, problem: Problem, upstream: Mapping[str, str]) -> str:
        """The prompt of ``role`` given the actual outputs of the upstream roles."""

    @abc.abstractmethod
    def local_gold(self, role: str, problem: Problem, upstream: Mapping[str, str]) -> str | None:
        """The correct output of ``role`` given those upstream outputs (None: undefined)."""

    @abc.abstractmethod
    def pretrain_lines(self, problem: Problem, rng: np.random.Generator) -> list[str]:
        """Base-model pretraining text from one problem."""

    def demo(
        self, role: str, problem: Problem, upstream: Mapping[str, str], rng: np.random.Generator
    ) -> str:
        """An imperfect demonstration of ``role`` (default: the correct output)."""
        return self.local_gold(role, problem, upstream) or problem.gold[role]

    def role_lines(self, problem: Problem, rng: np.random.Generator) -> list[str]:
        """Role-format demonstrations ``prompt + demo`` (upstream: gold, or corrupted 30%)."""
        lines = []
        for role in self.roles:
            up = self.gold_upstream(role, problem)
            for r in list(up):
                if rng.random() < 0.3:
                    up[r] = self.corrupt(r, up[r], rng)
            lines.append(self.prompt(role, problem, up) + self.demo(role, problem, up, rng))
        return lines

    def corrupt(self, role: str, text: str, rng: np.random.Generator) -> str:
        """A wrong output of ``role`` (used for probes of downstream roles)."""
        chars = list(text)
        i = int(rng.integers(len(chars)))
        pool = [c for c in "0123456789" if c != chars[i]] if chars[i].isdigit() else ["x"]
        chars[i] = pool[int(rng.integers(len(pool)))]
        return "".join(chars)

    # -- generic ------------------------------------------------------------------------
    def verify(self, problem: Problem, answer: str) -> float:
        """End-to-end reward of the final output: exact match, in {0, 1}."""
        return float(answer == problem.answer)

    def sample(
        self, rng: np.random.Generator, n: int, *, split: str = "train", shifted: bool = False
    ) -> list[Problem]:
        """``n`` problems of ``split`` (rejection on the key hash; splits never overlap)."""
        if split not in SPLITS:
            raise ValueError(f"split must be one of {SPLITS}, got {split!r}")
        out: list[Problem] = []
        tries = 0
        while len(out) < n:
            p = self.draw(rng, shifted)
            tries += 1
            if split_of(p.key) == split:
                out.append(p)
            elif tries > 1000 * (n + 10):
                raise RuntimeError(f"task {self.name}: cannot draw {n} {split} problems")
        return out

    def gold_upstream(self, role: str, problem: Problem) -> dict[str, str]:
        """Gold outputs of the roles before ``role``."""
        i = self.roles.index(role)
        return {r: problem.gold[r] for r in self.roles[:i]}

    def probes(self, role: str, n: int, *, seed: int, shifted: bool = False) -> list[Probe]:
        """A fixed probe set of role ``role``: probe-split problems, gold upstream inputs.

        With :attr:`PROBE_CORRUPT_LAST` the last role's probes get the second-to-last role's
        gold output corrupted in half the items, so that checking-and-refining is measured,
        not copying.
        """
        rng = np.random.default_rng([seed, 7919, self.roles.index(role), int(shifted)])
        out = []
        for p in self.sample(rng, n, split="probe", shifted=shifted):
            up = self.gold_upstream(role, p)
            roles = list(self.roles)
            last = role == roles[-1] and len(roles) > 1
            if self.PROBE_CORRUPT_LAST and last and rng.random() < 0.5:
                prev = roles[-2]
                up[prev] = self.corrupt(prev, up[prev], rng)
            target = self.local_gold(role, p, up)
            out.append(Probe(role, p, up, target if target is not None else p.gold[role]))
        return out

    def pretrain_corpus(self, rng: np.random.Generator, n: int) -> list[str]:
        """``n`` lines of pretraining text from train-split problems (20% shifted)."""
        lines: list[str] = []
        while len(lines) < n:
            shifted = bool(rng.random() < 0.2)
            lines.extend(self.pretrain_lines(self.sample(rng, 1, shifted=shifted)[0], rng))
        return lines[:n]


TASKS: dict[str, type[Task]] = {}


_T = TypeVar("_T", bound=type[Task])


def register_task(cls: _T) -> _T:
    """Register a :class:`Task` subclass under ``cls.name`` (usable as a decorator)."""
    TASKS[cls.name] = cls
    return cls
