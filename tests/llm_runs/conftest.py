"""Shared fixtures: a micro base pretrained once per session into a temp cache.

Only the tests that need torch skip without it (each such module calls
``pytest.importorskip("torch")``, and these fixtures do too); the config, task, run-log and
run-folder tests run on a core install.
"""

from __future__ import annotations

import copy

import pytest

MICRO = {
    "model": {"preset": "micro", "pretrain_steps": 30, "pretrain_batch": 32},
    "task": {"name": "math", "n_probe": 8, "n_test": 8},
    "rl": {"batch": 8, "warmup_steps": 2, "warmup_batch": 8},
    "steps": 6,
    "eval_every": 3,
    "ckpt_every": 2,
    "threads": 1,
}


@pytest.fixture(scope="session")
def base_cache(tmp_path_factory):
    """A temp base cache holding the micro bases of both tasks."""
    torch = pytest.importorskip("torch")
    pytest.importorskip("peft")
    from llm_runs import get_task
    from llm_runs._base_model import get_base

    cache = tmp_path_factory.mktemp("base_cache")
    torch.set_num_threads(1)
    for name in ("math", "rag"):
        get_base(get_task(name), preset="micro", cache=cache, steps=30, batch=32)
    return cache


@pytest.fixture
def micro_cfg(base_cache):
    """A dict for TrainConfig.from_dict: micro model, a few steps."""
    d = copy.deepcopy(MICRO)
    d["model"]["base_cache"] = str(base_cache)
    return d
