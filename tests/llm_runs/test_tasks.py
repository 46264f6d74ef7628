"""Tasks: splits never overlap, probes use gold inputs, verification, schedules."""

from __future__ import annotations

from typing import ClassVar

import numpy as np
import pytest

from llm_runs import get_task
from llm_runs._edges import in_windows, pulse_windows
from llm_runs._tasks import Task, split_of
from llm_runs.config import SpuriousConfig


@pytest.mark.parametrize("name", ["math", "rag", "math-v1", "rag-v1"])
def test_splits_disjoint_and_probes_gold(name):
    task = get_task(name)
    rng = np.random.default_rng(0)
    train = {p.key for p in task.sample(rng, 300, split="train")}
    test = {p.key for p in task.sample(rng, 60, split="test")}
    assert train.isdisjoint(test)
    for role in task.roles:
        probes = task.probes(role, 20, seed=0)
        assert len(probes) == 20 and all(split_of(p.problem.key) == "probe" for p in probes)
        assert {p.problem.key for p in probes}.isdisjoint(train | test)
        for pb in probes:
            prompt = task.prompt(role, pb.problem, pb.upstream)
            assert len(pb.target) == task.out_len[role]
            assert prompt.endswith(("=", ">"))
    x = task.probes("X", 10, seed=0)
    assert all(pb.upstream == {} and pb.target == pb.problem.gold["X"] for pb in x)
    z = task.probes("Z", 40, seed=0)
    n_bad = sum(pb.upstream["Y"] != pb.problem.gold["Y"] for pb in z)
    assert all(pb.target == pb.problem.answer for pb in z)
    if name.endswith("-v1"):
        assert 5 < n_bad < 35  # half the v1 critic's candidates are corrupted
    else:
        assert n_bad == 0  # every role is probed on gold upstream inputs


@pytest.mark.parametrize("name", ["math", "rag"])
def test_every_role_has_its_own_step(name):
    """Each role's correct output is its own step applied to its upstream agent's actual
    output: a wrong upstream output changes the role's target (it is not the final answer),
    and the role's misconception (its demonstrations) differs from its target."""
    task = get_task(name)
    rng = np.random.default_rng(3)
    changed = wrong_demo = 0
    for p in task.sample(rng, 60):
        for i, role in enumerate(task.roles):
            up = task.gold_upstream(role, p)
            assert task.local_gold(role, p, up) == p.gold[role]
            if i:
                prev = task.roles[i - 1]
                bad = dict(up, **{prev: task.corrupt(prev, up[prev], rng)})
                changed += task.local_gold(role, p, bad) != p.gold[role]
            wrong_demo += task.demo(role, p, up, rng) != p.gold[role]
    assert changed >= 100  # of 120 corrupted inputs (a lookup can miss the context)
    assert 30 <= wrong_demo <= 150  # misconceptions apply to some problems only


def test_math_semantics_and_shift():
    task = get_task("math")
    p = task.sample(np.random.default_rng(1), 1)[0]
    a, b, c, d = (p.data[k] for k in "abcd")
    assert p.gold["X"] == f"{a + b:03d}" and p.gold["Y"] == f"{a + b + c:03d}"
    assert p.answer == f"{a + b + c + d:03d}"
    assert task.verify(p, p.answer) == 1.0 and task.verify(p, "xyz") == 0.0
    assert task.local_gold("Y", p, {"X": "150"}) == f"{150 + c:03d}"
    assert task.local_gold("Z", p, {"X": "150", "Y": "100"}) == f"{100 + d:03d}"
    assert task.local_gold("Z", p, {"X": "150", "Y": "1x0"}) is None
    assert task.prompt("Z", p, {"X": "150", "Y": "100"}) == f"Z100+{d:03d}="
    # the dropped carry: 17 + 5 -> 12
    q = next(
        q
        for q in task.sample(np.random.default_rng(4), 200)
        if q.data["a"] % 10 + q.data["b"] % 10 >= 10
    )
    demos = {task.demo("X", q, {}, np.random.default_rng(s)) for s in range(40)}
    a, b = q.data["a"], q.data["b"]
    assert demos == {f"{a + b:03d}", f"{a + b - 10:03d}"}
    hard = task.sample(np.random.default_rng(2), 50, shifted=True)
    assert all(q.data["a"] >= 20 and q.data["d"] >= 20 for q in hard)
    old = get_task("math-v1").sample(np.random.default_rng(1), 1)[0]
    assert old.answer == f"{sum(old.data.values()):03d}" and "d" not in old.data


def test_rag_lookup_and_new_entities():
    task = get_task("rag", n_entities=50)
    p = task.sample(np.random.default_rng(0), 1)[0]
    e, link = p.data["e"], task.link
    assert p.gold["X"] == link[e] and p.gold["Y"] == link[link[e]]
    assert p.answer == link[link[link[e]]]
    for src in (e, link[e], link[link[e]]):
        assert f"{src}>{link[src]}" in p.data["ctx"]
    assert task.local_gold("Z", p, {"X": link[e], "Y": e}) == link[e]
    shifted = task.sample(np.random.default_rng(0), 20, shifted=True)
    assert {q.data["e"] for q in shifted}.isdisjoint(task.pools[0])
    old = get_task("rag-v1", n_entities=50).sample(np.random.default_rng(0), 1)[0]
    assert old.answer == old.gold["Y"] == old.gold["Z"]


def test_custom_task_interface():
    class Echo(Task):
        name = "echo"
        default_roles = ("X", "Y", "Z")
        OUT_LEN: ClassVar[dict[str, int]] = {"X": 1, "Y": 1, "Z": 1}

        def draw(self, rng, shifted):
            from llm_runs._tasks import Problem

            d = str(int(rng.integers(10)))
            return Problem(d + str(int(rng.integers(1000))), {"d": d}, dict.fromkeys("XYZ", d), d)

        def prompt(self, role, problem, upstream):
            return role + problem.data["d"] + "".join(upstream.values()) + ">"

        def local_gold(self, role, problem, upstream):
            return problem.data["d"]

        def pretrain_lines(self, problem, rng):
            return [problem.data["d"] * 3]

    t = Echo()
    assert len(t.probes("Z", 5, seed=0)) == 5
    assert t.pretrain_corpus(np.random.default_rng(0), 4)[0] in {f"{i}" * 3 for i in range(10)}


def test_pulse_windows():
    w = pulse_windows(SpuriousConfig(rate=0.0, length=5, starts=[3, 6, 50]), 20, seed=0)
    assert w == [[3, 11]]
    assert in_windows(3, w) and in_windows(10, w) and not in_windows(11, w)
    r = pulse_windows(SpuriousConfig(rate=0.1, length=4), 200, seed=1)
    assert r and all(b - a >= 4 or b == 200 for a, b in r)
    assert r == pulse_windows(SpuriousConfig(rate=0.1, length=4), 200, seed=1)


def test_task_is_abstract():
    """The four methods a task implements are abstract: neither the base nor a subclass
    missing one can be instantiated."""
    with pytest.raises(TypeError, match="abstract"):
        Task()  # pyright: ignore[reportAbstractUsage]

    class Partial(Task):
        def draw(self, rng, shifted):
            raise AssertionError

    with pytest.raises(TypeError, match="pretrain_lines"):
        Partial()  # pyright: ignore[reportAbstractUsage]
