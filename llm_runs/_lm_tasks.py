"""Tasks for a pretrained LLM (``--preset smollm2-135m``): ``math-lm``, three-step
two-digit arithmetic in few-shot prompts, and ``math-chat``, the same steps as chat turns.

A pretrained model has never seen the testbed's compact formats (``X12+35=``); it reads
arithmetic as people write it. ``math-lm`` asks for ``a + b + c + d`` (the operation of
each step is the option ``ops``, default ``+++``), one step per role on its upstream
agent's actual output, as in ``math``: X computes ``s = a + b``, Y ``r = s + c`` from X's
``s``, Z ``f = r + d`` from Y's ``r``. Each role's prompt is ``k_shots`` worked lines
(:data:`SHOTS`, the same for every role, in its operation) and then its own line left
open::

    23 + 14 = 37
    45 + 27 = 72
    41 + 18 =

and the role answers with the two digits of the result (every result is drawn in 10-99, so
outputs have a fixed width; SmolLM2's tokenizer gives each digit its own token, so
``OUT_LEN`` 2 tokens is 2 characters). With probability ``p_carry`` a step carries (or
borrows) in its units, where a small model errs most. Normal problems have two-digit right
operands; the shift ("other numbers") one-digit ones.

Measured on SmolLM2-135M-Instruct (greedy, gold upstream, 2026-12-07): X 0.08, Y 0.40,
Z 0.15 at step 0 (48 probes each); with per-role seeded worked lines instead, X 0.41, Y 0.56,
Z 0.03, and with Y subtracting, Y 0.04 (it answers with the worked lines' results): the
model is very sensitive to the lines. In chat-template forms (a question as the user turn,
with or without worked lines in it) it answers in words ("The sum of ...", "The answer
is") and got 0 of 48 sums in its first tokens. ``math-chat`` is kept for instruct bases
that do answer a chat turn with the number; on SmolLM2 use ``math-lm``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

import numpy as np

from ._tasks import Problem, Task, register_task

__all__ = ["LMMathChatTask", "LMMathTask"]

_LO, _HI = 10, 99  # every result (each role's output) is a two-digit number
#: The worked lines' operands (``u + v = w``; a subtracting role reads ``w - v = u``).
SHOTS = ((23, 14), (45, 27), (68, 19))


def _apply(op: str, u: int, v: int) -> int:
    return u + v if op == "+" else u - v


def _carries(op: str, u: int, v: int) -> bool:
    """Whether ``u op v`` carries (or borrows) in the units."""
    return (u % 10 + v % 10) >= 10 if op == "+" else (u % 10) < (v % 10)


@register_task
class LMMathTask(Task):
    """Three-step two-digit arithmetic in few-shot prompts, one step per role (module
    docstring).

    Args:
        seed: Unused (the task has no fixed content); kept for the interface.
        roles: Role names.
        p_bug: Probability of the dropped carry in each role's demonstrations (the
            pretraining text of a base built here; a packaged base is not pretrained).
        p_carry: Probability that a step carries or borrows in its units.
        ops: The operation of X, Y and Z, each ``+`` or ``-``.
        k_shots: Worked lines before each prompt's open line.
    """

    name = "math-lm"
    OUT_LEN: ClassVar[dict[str, int]] = {"X": 2, "Y": 2, "Z": 2}

    def __init__(
        self,
        *,
        seed: int = 0,
        roles: tuple[str, ...] | None = None,
        p_bug: float = 0.5,
        p_carry: float = 0.5,
        ops: str = "+++",
        k_shots: int = 2,
    ) -> None:
        super().__init__(seed=seed, roles=roles, p_bug=p_bug)
        if not 0.0 <= float(p_carry) <= 1.0:
            raise ValueError(f"p_carry must be in [0, 1], got {p_carry!r}")
        if len(ops) != 3 or set(ops) - {"+", "-"}:
            raise ValueError(f"ops must be three of '+' and '-', got {ops!r}")
        if type(k_shots) is not int or not 0 <= k_shots <= len(SHOTS):
            raise ValueError(f"k_shots must be an int in [0, {len(SHOTS)}], got {k_shots!r}")
        self.p_carry = float(p_carry)
        self.ops = dict(zip(self.roles, ops, strict=True))
        self.shots: dict[str, str] = {}
        for role in self.roles:  # the same worked lines for every role, in its operation
            op = self.ops[role]
            lines = [
                f"{u} + {v} = {u + v}" if op == "+" else f"{u + v} - {v} = {u}" for u, v in SHOTS
            ]
            self.shots[role] = "".join(f"{line}\n" for line in lines[:k_shots])

    def _operand(
        self, rng: np.random.Generator, op: str, left: int, carry: bool, shifted: bool
    ) -> int | None:
        """A right operand keeping ``left op v`` in 10-99, carrying as asked where it can
        (None: no operand of the range fits)."""
        lo, hi = (1, 9) if shifted else (10, 29 if op == "+" else 49)
        pool = [v for v in range(lo, hi + 1) if _LO <= _apply(op, left, v) <= _HI]
        if not pool:
            return None
        want = [v for v in pool if _carries(op, left, v) == carry]
        pick = want or pool
        return int(pick[int(rng.integers(len(pick)))])

    def draw(self, rng: np.random.Generator, shifted: bool) -> Problem:
        while True:  # redrawn where a chain leaves 10-99 (a long run of additions)
            a = int(rng.integers(10, 30))
            left, ops, outs = a, [], []
            for role in self.roles:
                carry = rng.random() < self.p_carry
                v = self._operand(rng, self.ops[role], left, carry, shifted)
                if v is None:
                    break
                left = _apply(self.ops[role], left, v)
                ops.append(v)
                outs.append(str(left))
            if len(ops) == len(self.roles):
                break
        gold = dict(zip(self.roles, outs, strict=True))
        o = "".join(self.ops[r] for r in self.roles)
        key = f"{a}{o[0]}{ops[0]}{o[1]}{ops[1]}{o[2]}{ops[2]}"
        data = {"a": a, "operands": tuple(ops)}
        return Problem(key, data, gold, outs[-1], shifted)

    def _operands(
        self, role: str, problem: Problem, upstream: Mapping[str, str]
    ) -> tuple[str, int]:
        """The role's left operand as text (X: ``a``, else its upstream agent's output) and
        its right operand."""
        i = self.roles.index(role)
        left = str(problem.data["a"]) if i == 0 else upstream[self.roles[i - 1]]
        return left, int(problem.data["operands"][i])

    def line(self, role: str, problem: Problem, upstream: Mapping[str, str]) -> str:
        """The role's open line, ``left op right =``."""
        left, right = self._operands(role, problem, upstream)
        return f"{left} {self.ops[role]} {right} ="

    def prompt(self, role: str, problem: Problem, upstream: Mapping[str, str]) -> str:
        return self.shots[role] + self.line(role, problem, upstream) + " "

    def local_gold(self, role: str, problem: Problem, upstream: Mapping[str, str]) -> str | None:
        left, right = self._operands(role, problem, upstream)
        if not left.isdigit():
            return None
        out = _apply(self.ops[role], int(left), right)
        return str(out) if out >= 0 else None

    def demo(
        self, role: str, problem: Problem, upstream: Mapping[str, str], rng: np.random.Generator
    ) -> str:
        """Misconception: the units carry (or borrow) dropped with probability ``p_bug``."""
        gold = self.local_gold(role, problem, upstream) or problem.gold[role]
        left, right = self._operands(role, problem, upstream)
        if rng.random() < self.p_bug and left.isdigit():
            u, v = int(left), right
            units = (u % 10 + v % 10) % 10 if self.ops[role] == "+" else (u % 10 - v % 10) % 10
            tens = u // 10 + v // 10 if self.ops[role] == "+" else u // 10 - v // 10
            return str(10 * tens + units) if tens >= 0 else gold
        return gold

    def pretrain_lines(self, problem: Problem, rng: np.random.Generator) -> list[str]:
        facts, left = [], problem.data["a"]
        for role, v in zip(self.roles, problem.data["operands"], strict=True):
            out = _apply(self.ops[role], left, v)
            facts.append(f"{left} {self.ops[role]} {v} = {out}")
            left = out
        return facts + self.role_lines(problem, rng)


@register_task
class LMMathChatTask(LMMathTask):
    """``math-lm`` asked as a chat turn: the worked lines and the open line as one user
    message in the base's chat template (the tokenizer applies it; a base without a chat
    template is refused), answered by the assistant's first two tokens."""

    name = "math-chat"
    chat = True

    def prompt(self, role: str, problem: Problem, upstream: Mapping[str, str]) -> str:
        return (
            "Complete the last line with the number only.\n"
            + self.shots[role]
            + self.line(role, problem, upstream)
        )
