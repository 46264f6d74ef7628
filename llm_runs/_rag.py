"""The ``rag`` task: three-hop lookups in a synthetic knowledge base given as context (and
its first form, ``rag-v1``).

The knowledge base (from the task seed) maps each entity (a 3-letter name) to a linked
entity. A problem asks for ``link(link(link(e)))`` and shows a context of facts
``abc>def`` (the three needed facts and ``n_distractors`` others, shuffled). X retrieves
``e1 = link(e)`` from the context, Y looks up X's actual ``e1``, Z looks up Y's actual
``e2``: each role performs one hop on its upstream agent's output. Prompts are the
lookup their role performs, in the pretraining facts' format ``ctx?entity=``. The split is
by question entity, so held-out questions ask about unseen entities. The shift swaps in a
second, disjoint set of entities ("new entities"). The misconception every role's
demonstrations carry with probability ``p_bug`` is positional retrieval (the first fact).
Unlike ``math``, every role learns at the full ``rl.lr`` by default: a lookup is slower
to learn than an addition (X rose from 0.23 by 0.00 in 60 steps at 0.05 of the rate, and
with it below the edges' threshold K the coupled Y and Z did not move either).
"""

from __future__ import annotations

import string
from collections.abc import Mapping
from typing import ClassVar

import numpy as np

from ._tasks import Problem, Task, register_task

__all__ = ["RagTask", "RagTaskV1"]


def _entities(seed: int, n_entities: int) -> tuple[tuple[list[str], list[str]], dict[str, str]]:
    """Two disjoint pools of ``n_entities`` names and the link map (no fixed points)."""
    if n_entities < 8:
        raise ValueError(f"n_entities must be >= 8, got {n_entities}")
    rng = np.random.default_rng([seed, 31337])
    letters = np.array(list(string.ascii_lowercase))
    names: list[str] = []
    seen: set[str] = set()
    while len(names) < 2 * n_entities:
        nm = "".join(rng.choice(letters, size=3))
        if nm not in seen:
            seen.add(nm)
            names.append(nm)
    pools = (names[:n_entities], names[n_entities:])
    link: dict[str, str] = {}
    for pool in pools:
        perm = rng.permutation(len(pool))
        for i, j in enumerate(perm):
            link[pool[i]] = pool[int(j)] if int(j) != i else pool[(i + 1) % len(pool)]
    return pools, link


def _lookup(ctx: str, ent: str) -> str | None:
    for fact in ctx.split(";"):
        src, dst = fact.split(">")
        if src == ent:
            return dst
    return None


def _first(ctx: str) -> str:
    """The positional misconception: the first fact's target."""
    return ctx.split(";")[0].split(">")[1]


def _corrupt_entity(text: str, rng: np.random.Generator) -> str:
    letters = [c for c in string.ascii_lowercase if c != text[-1]]
    return text[:-1] + letters[int(rng.integers(len(letters)))]


@register_task
class RagTask(Task):
    """Three-hop retrieval over a seeded synthetic knowledge base (module docstring).

    Args:
        seed: Knowledge-base seed.
        roles: Role names.
        n_entities: Entities per pool (normal and shifted pools are disjoint).
        n_distractors: Distractor facts per context.
        p_bug: Probability of positional retrieval in each role's demonstrations.
    """

    name = "rag"
    OUT_LEN: ClassVar[dict[str, int]] = {"X": 3, "Y": 3, "Z": 3}
    #: Default ``p_bug``.
    P_BUG: ClassVar[float] = 0.75

    def __init__(
        self,
        *,
        seed: int = 0,
        roles: tuple[str, ...] | None = None,
        n_entities: int = 400,
        n_distractors: int = 2,
        p_bug: float | None = None,
    ) -> None:
        p_bug = type(self).P_BUG if p_bug is None else p_bug
        super().__init__(seed=seed, roles=roles, p_bug=p_bug)
        self.pools, self.link = _entities(self.seed, int(n_entities))
        self.n_distractors = int(n_distractors)

    def draw(self, rng: np.random.Generator, shifted: bool) -> Problem:
        pool = self.pools[int(shifted)]
        e = pool[int(rng.integers(len(pool)))]
        chain = [e]
        for _ in range(3):
            chain.append(self.link[chain[-1]])
        facts = set(chain[:3])
        while len(facts) < 3 + self.n_distractors:
            facts.add(pool[int(rng.integers(len(pool)))])
        order = rng.permutation(sorted(facts))
        ctx = ";".join(f"{f}>{self.link[f]}" for f in order)
        gold = dict(zip(self.roles, chain[1:], strict=True))
        return Problem(f"{int(shifted)}:{e}", {"e": e, "ctx": ctx}, gold, chain[3], shifted)

    def _query(self, role: str, problem: Problem, upstream: Mapping[str, str]) -> str:
        i = self.roles.index(role)
        return problem.data["e"] if i == 0 else upstream[self.roles[i - 1]]

    def prompt(self, role: str, problem: Problem, upstream: Mapping[str, str]) -> str:
        return f"{self.canon(role)}{problem.data['ctx']}?{self._query(role, problem, upstream)}="

    def local_gold(self, role: str, problem: Problem, upstream: Mapping[str, str]) -> str | None:
        return _lookup(problem.data["ctx"], self._query(role, problem, upstream))

    def corrupt(self, role: str, text: str, rng: np.random.Generator) -> str:
        return _corrupt_entity(text, rng)

    def pretrain_lines(self, problem: Problem, rng: np.random.Generator) -> list[str]:
        ctx = problem.data["ctx"]
        first = ctx.split(";")[0].split(">")[0]
        queries = [problem.data["e"], *(problem.gold[r] for r in self.roles[:2]), first]
        facts = [f"{ctx}?{q}={self.link[q]}" for q in queries]
        return facts + self.role_lines(problem, rng)

    def demo(
        self, role: str, problem: Problem, upstream: Mapping[str, str], rng: np.random.Generator
    ) -> str:
        """Misconception: positional retrieval with probability ``p_bug``."""
        if rng.random() < self.p_bug:
            return _first(problem.data["ctx"])
        return self.local_gold(role, problem, upstream) or problem.gold[role]


@register_task
class RagTaskV1(RagTask):
    """The first testbed's two-hop retrieval (Z verifies Y's answer and copies it).

    Args:
        seed: Knowledge-base seed.
        roles: Role names.
        n_entities: Entities per pool (normal and shifted pools are disjoint).
        n_distractors: Distractor facts per context.
    """

    name = "rag-v1"
    PROBE_CORRUPT_LAST: ClassVar[bool] = True
    P_BUG: ClassVar[float] = 0.6

    def draw(self, rng: np.random.Generator, shifted: bool) -> Problem:
        pool = self.pools[int(shifted)]
        e = pool[int(rng.integers(len(pool)))]
        e1 = self.link[e]
        e2 = self.link[e1]
        facts = {e, e1}
        while len(facts) < 2 + self.n_distractors:
            facts.add(pool[int(rng.integers(len(pool)))])
        order = rng.permutation(sorted(facts))
        ctx = ";".join(f"{f}>{self.link[f]}" for f in order)
        x, y, z = self.roles
        gold = {x: e1, y: e2, z: e2}
        return Problem(f"{int(shifted)}:{e}", {"e": e, "ctx": ctx}, gold, e2, shifted)

    def prompt(self, role: str, problem: Problem, upstream: Mapping[str, str]) -> str:
        x, y, _ = self.roles
        d = problem.data
        tag = self.canon(role)
        if tag == "X":
            return f"X{d['ctx']}?{d['e']}="
        if tag == "Y":
            return f"Y{d['ctx']}|{d['e']}?{upstream[x]}="
        return f"Z{d['ctx']}|{d['e']}|{upstream[y]}?{upstream[x]}="

    def local_gold(self, role: str, problem: Problem, upstream: Mapping[str, str]) -> str | None:
        if self.canon(role) == "Y":
            return _lookup(problem.data["ctx"], upstream[self.roles[0]])
        return problem.gold[role]

    def pretrain_lines(self, problem: Problem, rng: np.random.Generator) -> list[str]:
        d = problem.data
        ctx = d["ctx"]
        first = ctx.split(";")[0].split(">")[0]
        facts = [
            f"{ctx}?{d['e']}={problem.gold[self.roles[0]]}",
            f"{ctx}?{first}={self.link[first]}",
        ]
        return facts + self.role_lines(problem, rng)

    def demo(
        self, role: str, problem: Problem, upstream: Mapping[str, str], rng: np.random.Generator
    ) -> str:
        """Misconceptions: X and Y take the first fact of the context (positional
        retrieval), Z copies Y's candidate; each with probability ``p_bug``."""
        tag = self.canon(role)
        if rng.random() >= self.p_bug:
            return self.local_gold(role, problem, upstream) or problem.gold[role]
        if tag in ("X", "Y"):
            return _first(problem.data["ctx"])
        return upstream[self.roles[1]]
