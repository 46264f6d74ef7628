"""CUDA checks (skipped without a GPU): bf16 autocast training and a valid log."""

from __future__ import annotations

import pytest

pytest.importorskip("torch")
pytest.importorskip("peft")
import torch

from llm_runs._train import train
from llm_runs.config import TrainConfig
from llm_runs.runlog import read_run

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device"),
]


def test_cuda_bf16_run(tmp_path, micro_cfg):
    d = micro_cfg
    d["device"] = "cuda"
    d["rl"]["algo"] = "grpo"
    d["rl"]["group"] = 2
    log = read_run(train(TrainConfig.from_dict(d), tmp_path / "run", progress=False))
    assert log.manifest["device"] == "cuda"
    assert [r["step"] for r in log.e2e_rows] == [0, 3, 6]
    assert all(r["loss"] is not None for r in log.agent_rows if r["step"] == 6)


def test_cuda_gradients_reach_every_adapter(base_cache):
    from llm_runs import get_task
    from llm_runs._base_model import get_base
    from llm_runs._policy import MultiAdapter

    task = get_task("math")
    base = get_base(task, preset="micro", cache=base_cache, steps=30, batch=32, device="cuda")
    pol = MultiAdapter(base, ["X", "Y", "Z"], device="cuda")
    enc = pol.encode(["X012|25+13>"] * 4)
    comp = torch.tensor([pol.tok.encode("038")] * 4, device="cuda")
    for a in ("X", "Y", "Z"):
        pol.activate(a)
        logp, _, _ = pol.token_logprobs(enc, comp)
        pol.backward(a, -logp.mean())
    for a, ps in pol.params.items():
        assert any(p.grad is not None and p.grad.abs().sum() > 0 for p in ps), a


def test_cuda_micro_llama_with_bpe_tokenizer(tmp_path, micro_cfg):
    """A micro Llama with its BPE tokenizer, pretrained on cuda, trained through
    ``model.base`` (warm-up and RL steps) under bf16 autocast."""
    from llm_runs import get_task
    from llm_runs._base_model import pretrain_base

    base = pretrain_base(get_task("math"), tmp_path / "llama", preset="micro", arch="llama",
                         tokenizer="bpe", steps=30, batch=32, device="cuda")  # fmt: skip
    d = micro_cfg
    d["device"] = "cuda"
    d["model"]["base"] = str(base)
    log = read_run(train(TrainConfig.from_dict(d), tmp_path / "run", progress=False))
    assert log.manifest["device"] == "cuda" and log.manifest["base"]["arch"] == "llama"
    assert log.manifest["lora_target_modules"] == ["q_proj", "v_proj"]
    assert [r["step"] for r in log.e2e_rows] == [0, 3, 6]
    assert all(r["loss"] is not None for r in log.agent_rows if r["step"] == 6)
