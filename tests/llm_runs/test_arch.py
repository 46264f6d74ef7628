"""Llama- and Qwen2-style bases with a BPE tokenizer trained here: the tokenizer, the model
and its LoRA targets, generation and scoring through the subword tokenizer, and
``pretrain --out`` + ``train --base PATH`` end to end with an exact resume."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

pytest.importorskip("torch")
pytest.importorskip("peft")
import torch

from llm_runs import get_task
from llm_runs import runlog as rl
from llm_runs._tokenizer import HFTokenizer, load_tokenizer, train_bpe
from llm_runs.config import ConfigError, TrainConfig

ARCHS = ["llama", "qwen2"]


def _corpus(name: str, n: int = 3000) -> list[str]:
    return get_task(name).pretrain_corpus(np.random.default_rng([0, 4242]), n)


@pytest.mark.parametrize("name", ["math", "rag"])
def test_bpe_tokenizer_is_subword_saved_and_splits_at_prompt_ends(tmp_path, name):
    corpus = _corpus(name)
    tok = train_bpe(corpus)
    assert train_bpe(corpus).tok.get_vocab() == tok.tok.get_vocab()  # deterministic
    assert (tok.pad_id, tok.bos_id, tok.eos_id, tok.tok.unk_token_id) == (0, 1, 2, 3)
    pieces = [tok.tok.convert_ids_to_tokens(tok.encode(line)) for line in corpus[:200]]
    assert any(len(p) > 1 for ps in pieces for p in ps)  # real merges, not characters
    assert all(tok.decode(tok.encode(line)) == line for line in corpus[:500])
    # every ordinary token is at least one character: n tokens cover an n-char output
    specials = set(tok.tok.all_special_ids)
    assert all(len(tok.decode([i])) >= 1 for i in range(tok.vocab_size) if i not in specials)
    # prompt and completion tokenise the same apart as together (scoring = pretraining)
    task = get_task(name)
    for p in task.sample(np.random.default_rng(1), 20, split="train"):
        for role in task.roles:
            prompt = task.prompt(role, p, task.gold_upstream(role, p))
            gold = p.gold[role]
            assert tok.encode(prompt) + tok.encode(gold) == tok.encode(prompt + gold)
    tok.save(tmp_path)
    back = load_tokenizer(tmp_path)
    assert isinstance(back, HFTokenizer)
    assert back.vocab_size == tok.vocab_size and back.eos_id == 2
    assert all(back.encode(line) == tok.encode(line) for line in corpus[:500])
    assert back.decode(back.encode("X1é2")) == "X12"  # outside the alphabet: <unk>, dropped


@pytest.mark.parametrize(
    ("arch", "targets", "kind"),
    [
        ("gpt2", ["c_attn", "c_proj", "c_fc"], "GPT2LMHeadModel"),
        ("llama", ["q_proj", "v_proj"], "LlamaForCausalLM"),
        ("qwen2", ["q_proj", "v_proj"], "Qwen2ForCausalLM"),
    ],
)
def test_build_model_and_lora_targets_per_architecture(arch, targets, kind):
    from llm_runs._arch import build_model, lora_targets

    model = build_model("micro", 100, arch)
    assert type(model).__name__ == kind and model.config.model_type == arch
    assert model.get_input_embeddings().weight.shape == (100, 32)
    assert model.config.num_hidden_layers == 2
    got, fan = lora_targets(model)
    assert sorted(got) == sorted(targets) and fan == (arch == "gpt2")
    if arch == "qwen2":
        assert model.config.num_key_value_heads == 1 and model.config.tie_word_embeddings


def test_bad_architecture_or_tokenizer_is_a_config_error():
    with pytest.raises(ConfigError, match=r"model\.arch: must be one of"):
        TrainConfig.from_dict({"model": {"arch": "mamba"}})
    with pytest.raises(ConfigError, match=r"model\.tokenizer: must be one of"):
        TrainConfig.from_dict({"model": {"tokenizer": "wordpiece"}})
    for flag in ("--arch=mamba", "--tokenizer=sp"):
        res = _cli("pretrain", flag, "--out", "unused")
        assert res.returncode == 2 and res.stderr.startswith("error: ")
        assert res.stderr.count("\n") == 1 and "Traceback" not in res.stderr


def test_cache_keys_gpt2_char_unchanged_and_others_apart(tmp_path):
    from llm_runs._base_model import cache_key, cache_path, get_base

    task = get_task("math")
    sample = task.pretrain_corpus(np.random.default_rng([0, 4242]), 32)
    legacy = json.dumps(["micro", "math", task.seed, task.roles, 3, 8, 3e-3, sample])
    assert cache_key(task, "micro", 3, 8, 3e-3) == hashlib.sha1(legacy.encode()).hexdigest()[:10]
    gpt2 = cache_path(task, tmp_path, "micro", 3, 8, 3e-3)
    assert gpt2.name.startswith("base-micro-math-")
    base = get_base(task, preset="micro", arch="qwen2", tokenizer="bpe", cache=tmp_path, steps=3,
                    batch=8)  # fmt: skip
    assert base.path == cache_path(task, tmp_path, "micro", 3, 8, 3e-3, "qwen2", "bpe")
    assert base.path is not None and base.path.name.startswith("base-qwen2-bpe-micro-math-")
    assert base.meta["arch"] == "qwen2" and base.model.config.model_type == "qwen2"
    assert (base.path / "tokenizer.json").is_file()
    assert not (base.path / "char_tokenizer.json").exists()


@pytest.fixture(scope="module")
def bpe_bases(tmp_path_factory):
    """Micro Llama and Qwen2 bases with BPE tokenizers (pretrained a few steps)."""
    from llm_runs._base_model import pretrain_base

    root = tmp_path_factory.mktemp("bpe_bases")
    return {
        a: pretrain_base(
            get_task("math"), root / a, preset="micro", arch=a, tokenizer="bpe", steps=5, batch=16
        )
        for a in ARCHS
    }


@pytest.mark.parametrize("arch", ARCHS)
def test_generation_and_scoring_through_the_subword_tokenizer(bpe_bases, arch):
    """Sampling-pass log-probs equal a scoring forward (KV cache, left padding), and as
    many tokens as a role's output has characters decode to at least that many (the run
    cuts the text to the role's length)."""
    from llm_runs._base_model import load_base
    from llm_runs._policy import MultiAdapter

    task = get_task("math")
    base = load_base(bpe_bases[arch])
    pol = MultiAdapter(base, ["X", "Y"], r=4, alpha=8, seed=0)
    assert pol.target_modules == ["q_proj", "v_proj"]
    probs = task.sample(np.random.default_rng(2), 6)
    prompts = [task.prompt("Y", p, task.gold_upstream("Y", p)) for p in probs] + ["Y7="]
    enc = pol.encode(prompts)
    assert len(set(enc.mask.sum(1).tolist())) > 1  # left padding is exercised
    g = torch.Generator().manual_seed(0)
    ids, logp = pol.generate("Y", enc, 3, greedy=False, generator=g, with_logp=True)
    pol.activate("Y")
    with torch.no_grad():
        ref, _, _ = pol.token_logprobs(enc, ids)
    torch.testing.assert_close(logp, ref, atol=1e-5, rtol=1e-5)
    assert isinstance(pol.tok, HFTokenizer)
    specials = set(pol.tok.tok.all_special_ids)
    texts = pol.decode(ids)
    for row, text in zip(ids.tolist(), texts, strict=True):
        if not specials & set(row):
            assert len(text) >= 3  # three tokens cover three characters


def _cli(*args, env=None, timeout=600):
    env = env or {**os.environ, "PYTHONHASHSEED": "0", "OMP_NUM_THREADS": "1"}
    return subprocess.run(
        [sys.executable, "-m", "llm_runs", *map(str, args)],
        capture_output=True,
        text=True,
        env=env,
        timeout=timeout,
    )


@pytest.mark.parametrize("arch", ARCHS)
def test_pretrain_out_then_train_base_end_to_end_and_resume_exact(tmp_path, arch):
    """The user's path: ``pretrain --arch A --tokenizer bpe --out B``, then ``train --base
    B`` (warm-up and RL steps); resuming from the checkpoint at half way regenerates the
    second half of the log exactly (no kill needed: the finished run's folder, marked
    running again, holds the step-2 checkpoint)."""
    from llm_runs._train import CKPT_FILE, train

    base = tmp_path / "base"
    res = _cli("pretrain", "--task", "math", "--preset", "micro", "--arch", arch,
               "--tokenizer", "bpe", "--steps", "10", "--batch", "16", "--out", base)  # fmt: skip
    assert res.returncode == 0, res.stderr[-2000:]
    info = json.loads(res.stdout)
    assert info["arch"] == arch and info["tokenizer"] == "bpe" and info["path"] == str(base)
    assert (base / "tokenizer.json").is_file() and (base / "config.json").is_file()
    again = _cli("pretrain", "--preset", "micro", "--arch", arch, "--out", base)
    assert again.returncode == 2 and "not empty" in again.stderr
    run = tmp_path / "run"
    res = _cli("train", "--base", base, "--task", "math", "--steps", "4", "--eval-every", "2",
               "--ckpt-every", "2", "--threads", "1", "--set", "rl.batch=4",
               "--set", "rl.warmup_steps=1", "--set", "rl.warmup_batch=4",
               "--set", "task.n_probe=4", "--set", "task.n_test=4", "--out", run,
               "--no-progress")  # fmt: skip
    assert res.returncode == 0, res.stderr[-2000:]
    assert "end-to-end accuracy" in res.stdout and "step 0 -> 4" in res.stdout
    log = rl.read_run(run, strict=True)
    assert log.status == "finished" and [r["step"] for r in log.e2e_rows] == [0, 2, 4]
    assert log.manifest["base"]["arch"] == arch and log.manifest["base"]["path"] == str(base)
    assert log.manifest["lora_target_modules"] == ["q_proj", "v_proj"]
    assert all(r["loss"] is not None for r in log.agent_rows if r["step"] == 4)
    assert all(r["reward"] is not None for r in log.agent_rows if r["step"] == 4)  # RL ran
    assert torch.load(run / CKPT_FILE, weights_only=False)["next_step"] == 2
    copy = tmp_path / "resumed"
    shutil.copytree(run, copy)
    (copy / "run.lock").unlink(missing_ok=True)
    rl.update_manifest(copy, status="running")
    train(None, copy, resume=True, progress=False)
    resumed = rl.read_run(copy, strict=True)
    assert resumed.status == "finished"
    assert resumed.rows == log.rows
