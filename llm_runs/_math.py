"""The ``math`` task: three-step arithmetic, one step per role (and its first form, ``math-v1``).

``math`` asks for ``a + b + c + d``. X computes ``s = a + b``, Y computes ``r = s + c`` from
X's actual ``s``, Z computes ``f = r + d`` from Y's actual ``r``: every role has an addition
of its own, on its upstream agent's output. Normal: operands in [0, 19]; shifted ("harder
numbers"): in [20, 49]. Numbers are zero-padded (a, b: 2 digits, c, d and outputs: 3), so
prompts have fixed width, and each prompt is its step in the pretraining facts' format
(``Xaa+bb=``, ``Ysss+ccc=``, ``Zrrr+ddd=``). The misconception every role's demonstrations
carry with probability ``p_bug`` is the dropped units carry; each step carries its units
with probability ``p_carry`` (the operands b, c, d are drawn to make it so), so that every
role starts well below its ceiling. The roles learn at ``LR_SCALE`` of ``rl.lr`` by default
(X 0.15, Y 0.06, Z 0.1; ``rl.lr_scale`` overrides it), so that they learn in turn, each after
its regulators: at the full rate every role fixed its step within 10-30 steps whatever its
regulation (Y reached 0.86 by step 50 at a fifth of the rate), so the edges had little
learning left to act on, and with X at 0.05 the input role stayed below the edges'
threshold K = 0.5 until step ~60, after its targets had learned. Probe (seed 99, C1-AND):
X passes 0.5 near step 20; Y and Z stay at 0.47 until step 50 and reach 0.83 and 0.77 by
step 80; with X -> Y repressing instead, Y is still at 0.48 at step 90.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

import numpy as np

from ._tasks import Problem, Task, register_task

__all__ = ["MathTask", "MathTaskV1"]


def _fmt(v: int, width: int = 3) -> str | None:
    s = str(v).zfill(width) if v >= 0 else "-" + str(-v).zfill(width - 1)
    return s if len(s) == width else None


def _drop_carry(u: int, v: int) -> int:
    """``u + v`` with the units carry forgotten (the classic misconception)."""
    return (u % 10 + v % 10) % 10 + 10 * (u // 10 + v // 10)


def _add(text: str, v: int) -> str | None:
    """``int(text) + v`` formatted, None when ``text`` is not a number."""
    return _fmt(int(text) + v) if text.isdigit() else None


@register_task
class MathTask(Task):
    """Three-step arithmetic ``a + b + c + d``, one addition per role (module docstring).

    Args:
        seed: Unused (the task has no fixed content); kept for the interface.
        roles: Role names.
        p_bug: Probability of the dropped carry in each role's demonstrations.
        p_carry: Probability that a role's addition carries its units (where the
            misconception bites; 0.45 for uniform operands).
    """

    name = "math"
    OUT_LEN: ClassVar[dict[str, int]] = {"X": 3, "Y": 3, "Z": 3}

    LR_SCALE: ClassVar[dict[str, float]] = {"X": 0.15, "Y": 0.06, "Z": 0.1}

    def __init__(
        self,
        *,
        seed: int = 0,
        roles: tuple[str, ...] | None = None,
        p_bug: float = 0.75,
        p_carry: float = 0.8,
    ) -> None:
        super().__init__(seed=seed, roles=roles, p_bug=p_bug)
        if not 0.0 <= float(p_carry) <= 1.0:
            raise ValueError(f"p_carry must be in [0, 1], got {p_carry!r}")
        self.p_carry = float(p_carry)

    def draw(self, rng: np.random.Generator, shifted: bool) -> Problem:
        lo, hi = (20, 50) if shifted else (0, 20)
        a = int(rng.integers(lo, hi))
        ops, left = [], a
        for _ in range(3):  # b, c, d: each step carries its units with probability p_carry
            want = rng.random() < self.p_carry
            pool = [v for v in range(lo, hi) if ((left % 10 + v % 10) >= 10) == want]
            v = int(pool[int(rng.integers(len(pool)))]) if pool else int(rng.integers(lo, hi))
            ops.append(v)
            left += v
        b, c, d = ops
        x, y, z = self.roles
        gold = {x: _fmt(a + b) or "", y: _fmt(a + b + c) or "", z: _fmt(a + b + c + d) or ""}
        data = {"a": a, "b": b, "c": c, "d": d}
        return Problem(f"{a}+{b}+{c}+{d}", data, gold, gold[z], shifted)

    def _operands(
        self, role: str, problem: Problem, upstream: Mapping[str, str]
    ) -> tuple[str, int]:
        """The role's left operand as text (X: ``a``, else its upstream agent's output) and
        its right operand (X: ``b``, Y: ``c``, Z: ``d``)."""
        d, tag = problem.data, self.canon(role)
        if tag == "X":
            return f"{d['a']:02d}", d["b"]
        left = upstream[self.roles[self.roles.index(role) - 1]]
        return left, d["c" if tag == "Y" else "d"]

    def prompt(self, role: str, problem: Problem, upstream: Mapping[str, str]) -> str:
        left, right = self._operands(role, problem, upstream)
        width = 2 if self.canon(role) == "X" else 3
        return f"{self.canon(role)}{left}+{right:0{width}d}="

    def local_gold(self, role: str, problem: Problem, upstream: Mapping[str, str]) -> str | None:
        left, right = self._operands(role, problem, upstream)
        return _add(left, right)

    def pretrain_lines(self, problem: Problem, rng: np.random.Generator) -> list[str]:
        d = problem.data
        s, r = d["a"] + d["b"], d["a"] + d["b"] + d["c"]
        facts = [
            f"{d['a']:02d}+{d['b']:02d}={s:03d}",
            f"{s:03d}+{d['c']:03d}={r:03d}",
            f"{r:03d}+{d['d']:03d}={problem.answer}",
        ]
        return facts + self.role_lines(problem, rng)

    def demo(
        self, role: str, problem: Problem, upstream: Mapping[str, str], rng: np.random.Generator
    ) -> str:
        """Misconception: each role drops the units carry with probability ``p_bug``."""
        left, right = self._operands(role, problem, upstream)
        gold = self.local_gold(role, problem, upstream) or problem.gold[role]
        if rng.random() < self.p_bug and left.isdigit():
            return _fmt(_drop_carry(int(left), right)) or gold
        return gold


@register_task
class MathTaskV1(Task):
    """The first testbed's ``a + b + c``: X computes ``s = a + b``, Y computes ``s + c``
    from X's ``s``, Z checks Y's answer against X's ``s`` and ``c`` and outputs the final
    answer (its misconception: copying Y's candidate, which RL never fixed). Normal: a, b,
    c in [0, 19]; shifted: in [20, 49]. Prompts ``Xccc|aa+bb=``, ``Yaa+bb|sss+ccc=``,
    ``Zaa+bb|yyy|sss+ccc=``.
    """

    name = "math-v1"
    OUT_LEN: ClassVar[dict[str, int]] = {"X": 3, "Y": 3, "Z": 3}
    PROBE_CORRUPT_LAST: ClassVar[bool] = True

    def draw(self, rng: np.random.Generator, shifted: bool) -> Problem:
        lo, hi = (20, 50) if shifted else (0, 20)
        a, b, c = (int(v) for v in rng.integers(lo, hi, size=3))
        s, r = a + b, a + b + c
        x, y, z = self.roles
        gold = {x: _fmt(s) or "", y: _fmt(r) or "", z: _fmt(r) or ""}
        return Problem(f"{a}+{b}+{c}", {"a": a, "b": b, "c": c}, gold, gold[z], shifted)

    def prompt(self, role: str, problem: Problem, upstream: Mapping[str, str]) -> str:
        x, y, _ = self.roles
        tag, d = self.canon(role), problem.data
        ab = f"{d['a']:02d}+{d['b']:02d}"
        if tag == "X":
            return f"X{d['c']:03d}|{ab}="
        if tag == "Y":
            return f"Y{ab}|{upstream[x]}+{d['c']:03d}="
        return f"Z{ab}|{upstream[y]}|{upstream[x]}+{d['c']:03d}="

    def local_gold(self, role: str, problem: Problem, upstream: Mapping[str, str]) -> str | None:
        if self.canon(role) == "Y":
            x = upstream[self.roles[0]]
            return _fmt(int(x) + problem.data["c"]) if x.isdigit() else None
        return problem.gold[role]

    def pretrain_lines(self, problem: Problem, rng: np.random.Generator) -> list[str]:
        d = problem.data
        s = d["a"] + d["b"]
        facts = [f"{d['a']:02d}+{d['b']:02d}={s:03d}", f"{s:03d}+{d['c']:03d}={problem.answer}"]
        return facts + self.role_lines(problem, rng)

    def demo(
        self, role: str, problem: Problem, upstream: Mapping[str, str], rng: np.random.Generator
    ) -> str:
        """Misconceptions: X and Y drop the units carry, Z copies Y's candidate; each with
        probability ``p_bug``."""
        tag, d = self.canon(role), problem.data
        bug = rng.random() < self.p_bug
        if tag == "X":
            return (_fmt(_drop_carry(d["a"], d["b"])) if bug else None) or problem.gold[role]
        if tag == "Y":
            x = upstream[self.roles[0]]
            if bug and x.isdigit():
                return _fmt(_drop_carry(int(x), d["c"])) or problem.gold[role]
            return self.local_gold(role, problem, upstream) or problem.gold[role]
        return upstream[self.roles[1]] if bug else problem.gold[role]
