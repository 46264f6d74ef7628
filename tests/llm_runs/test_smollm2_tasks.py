"""The tasks of a pretrained LLM (``math-lm``, ``math-chat``): problems, prompts, splits and
probes, torch-free (the base they run on is tested in test_smollm2_base.py)."""

from __future__ import annotations

import numpy as np
import pytest

from llm_runs import get_task
from llm_runs._tasks import split_of


@pytest.mark.parametrize("ops", ["+++", "+-+", "-+-"])
def test_every_output_is_two_digits_and_chains_on_the_upstream_output(ops):
    task = get_task("math-lm", ops=ops)
    for shifted in (False, True):
        for p in task.sample(np.random.default_rng(0), 300, shifted=shifted):
            assert all(len(v) == 2 and v.isdigit() for v in p.gold.values())
            up: dict[str, str] = {}
            for role in task.roles:
                assert task.local_gold(role, p, up) == p.gold[role]
                up[role] = p.gold[role]
            assert p.answer == p.gold["Z"]
            right = p.data["operands"]
            assert (min(right) >= 10) != shifted  # the shift: one-digit right operands


def test_prompt_is_worked_lines_then_the_open_line_on_actual_upstream_output():
    task = get_task("math-lm")
    p = task.sample(np.random.default_rng(1), 1)[0]
    y = task.prompt("Y", p, {"X": "41"})
    assert y == f"23 + 14 = 37\n45 + 27 = 72\n41 + {p.data['operands'][1]} = "
    assert task.local_gold("Y", p, {"X": "41"}) == str(41 + p.data["operands"][1])
    assert task.local_gold("Y", p, {"X": "4x"}) is None  # not a number: no gold
    assert task.out_len == {"X": 2, "Y": 2, "Z": 2}
    sub = get_task("math-lm", ops="+-+", k_shots=3)
    assert sub.shots["Y"] == "37 - 14 = 23\n72 - 27 = 45\n87 - 19 = 68\n"


def test_splits_disjoint_and_probes_take_gold_upstream():
    task = get_task("math-lm")
    rng = np.random.default_rng(2)
    keys = {s: {p.key for p in task.sample(rng, 200, split=s)} for s in ("train", "probe", "test")}
    assert not keys["train"] & keys["probe"] and not keys["train"] & keys["test"]
    assert not keys["probe"] & keys["test"]
    for role in task.roles:
        probes = task.probes(role, 16, seed=0)
        assert all(split_of(pb.problem.key) == "probe" for pb in probes)
        assert all(pb.upstream == task.gold_upstream(role, pb.problem) for pb in probes)
        assert all(pb.target == pb.problem.gold[role] for pb in probes)


def test_pretraining_text_and_demos_for_a_base_built_here():
    task = get_task("math-lm", p_bug=1.0, p_carry=1.0)
    rng = np.random.default_rng(3)
    p = task.sample(rng, 1)[0]
    lines = task.pretrain_lines(p, rng)
    assert lines[0] == f"{p.data['a']} + {p.data['operands'][0]} = {p.gold['X']}"
    demo = task.demo("X", p, {}, rng)  # the dropped carry (every step carries here)
    assert demo != p.gold["X"] and len(demo) == 2


@pytest.mark.parametrize(
    "opts",
    [{"ops": "++"}, {"ops": "+*+"}, {"k_shots": 4}, {"k_shots": -1}, {"p_carry": 1.5}],
)
def test_bad_options_are_refused(opts):
    with pytest.raises(ValueError):
        get_task("math-lm", **opts)


def test_chat_form_is_flagged_and_asks_for_the_number():
    chat = get_task("math-chat")
    assert chat.chat and not get_task("math-lm").chat and not get_task("math").chat
    p = chat.sample(np.random.default_rng(4), 1)[0]
    text = chat.prompt("X", p, {})
    assert text.startswith("Complete the last line with the number only.\n23 + 14 = 37\n")
    assert text.endswith(f"{p.data['a']} + {p.data['operands'][0]} =")
