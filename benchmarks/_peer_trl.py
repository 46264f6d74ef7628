"""TRL as a peer of llm_runs' joint trainer (``bench_llm.py --peer trl``).

TRL's ``GRPOTrainer`` trains one policy per trainer; the 3-role pipeline therefore gets one
trainer per role, each with its own peft LoRA adapter (the same rank, alpha and target
modules as llm_runs') on its own copy of the same cached base model (a peft model wraps the
base it is given, so three trainers need three copies). What TRL needs and the project
provides without any hub download:

* the model: the cached base (a transformers ``GPT2LMHeadModel``) passed as an object;
* a tokenizer TRL accepts: :func:`hf_tokenizer` builds a ``PreTrainedTokenizerFast`` with
  the project's character vocabulary (the same ids as :class:`llm_runs.CharTokenizer`),
  from the ``tokenizers`` library, offline;
* the reward: the task's verifier for the role (:func:`role_reward`: exact match of the
  role's output with its correct output given its inputs, ``Task.local_gold``).

A TRL trainer cannot feed one role's samples to the next role's prompts (each trainer
generates for its own dataset), so each role's prompts carry the gold upstream outputs
(:func:`role_prompts`): the roles' updates are the same kind (GRPO, same group, batch,
learning rate, temperature, output length), their inputs are the training problems' gold
upstream, as in the probes.
"""

from __future__ import annotations

import copy
import time
from typing import Any

import numpy as np
import torch

from llm_runs import CharTokenizer
from llm_runs._tasks import Probe, Task

_SPECIALS = ("<pad>", "<bos>", "<eos>")
BOS = "<bos>"  # llm_runs' prompts start with it (``MultiAdapter.encode``); a special token here


def hf_tokenizer(tok: CharTokenizer) -> Any:
    """A transformers fast tokenizer with ``tok``'s ids: one token per character, the
    specials ``<pad>`` 0, ``<bos>`` 1, ``<eos>`` 2, left padding (for generation)."""
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {s: i for i, s in enumerate(_SPECIALS)}
    vocab |= {c: i + len(_SPECIALS) for i, c in enumerate(tok.alphabet)}
    core = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<pad>"))
    core.pre_tokenizer = pre_tokenizers.Split(Regex("."), behavior="isolated")
    core.decoder = decoders.Fuse()
    hf = PreTrainedTokenizerFast(
        tokenizer_object=core,
        pad_token="<pad>",
        bos_token="<bos>",
        eos_token="<eos>",
        padding_side="left",
    )
    return hf


def role_prompts(task: Task, role: str, n: int, seed: int) -> list[dict[str, str]]:
    """``n`` training rows of ``role``: the prompt (``<bos>`` + the task's prompt with gold
    upstream outputs) and the role's correct output given them (train split only)."""
    rng = np.random.default_rng([seed, 31, task.roles.index(role)])
    rows = []
    for p in task.sample(rng, n, split="train"):
        up = task.gold_upstream(role, p)
        gold = task.local_gold(role, p, up) or p.gold[role]
        rows.append({"prompt": BOS + task.prompt(role, p, up), "gold": gold})
    return rows


def role_reward(task: Task, role: str):
    """TRL reward function of ``role``: 1 where the first ``out_len`` characters of the
    completion are the gold output, else 0."""
    n = task.out_len[role]

    def reward(prompts, completions, gold, **_: Any) -> list[float]:
        return [float(c[:n] == g) for c, g in zip(completions, gold, strict=True)]

    reward.__name__ = f"verify_{role}"
    return reward


class StepTimer:
    """A TRL ``TrainerCallback`` recording each optimizer step's wall seconds."""

    def __init__(self) -> None:
        self.times: list[float] = []
        self._t0 = 0.0

    def on_step_begin(self, args, state, control, **kw):
        self._t0 = time.perf_counter()

    def on_step_end(self, args, state, control, **kw):
        self.times.append(time.perf_counter() - self._t0)


def make_trainer(
    base_model: Any,
    hf_tok: Any,
    task: Task,
    role: str,
    *,
    steps: int,
    prompts_per_step: int,
    group: int,
    lr: float,
    r: int,
    alpha: float,
    seed: int,
    out_dir: str,
) -> tuple[Any, StepTimer]:
    """One GRPO trainer for ``role`` with a LoRA adapter on its own copy of the base."""
    from datasets import Dataset
    from peft import LoraConfig
    from transformers import TrainerCallback
    from trl import GRPOConfig, GRPOTrainer

    from llm_runs import lora_targets

    model = copy.deepcopy(base_model)
    for p in model.parameters():
        p.requires_grad_(False)
    targets, fan = lora_targets(model)
    lora = LoraConfig(
        r=r,
        lora_alpha=alpha,  # pyright: ignore[reportArgumentType]
        lora_dropout=0.0,
        bias="none",
        target_modules=targets,
        fan_in_fan_out=fan,
        task_type="CAUSAL_LM",
    )
    rows = role_prompts(task, role, steps * prompts_per_step, seed)
    cfg = GRPOConfig(
        output_dir=out_dir,
        max_steps=steps,
        per_device_train_batch_size=prompts_per_step * group,
        num_generations=group,
        max_completion_length=task.out_len[role],
        learning_rate=lr,
        # llm_runs ramps the rate linearly over its first 10 steps, then holds it
        lr_scheduler_type="constant_with_warmup",
        warmup_steps=10,
        weight_decay=0.0,
        max_grad_norm=1.0,
        temperature=1.0,
        beta=0.0,
        logging_steps=10**9,
        save_strategy="no",
        report_to="none",
        use_cpu=True,
        seed=seed,
        dataloader_num_workers=0,
        disable_tqdm=True,
        shuffle_dataset=False,
    )
    timer = StepTimer()
    cb = type("_Timer", (TrainerCallback,), {})()
    cb.on_step_begin, cb.on_step_end = timer.on_step_begin, timer.on_step_end
    trainer = GRPOTrainer(
        model=model,
        reward_funcs=role_reward(task, role),
        args=cfg,
        train_dataset=Dataset.from_list(rows),
        processing_class=hf_tok,
        peft_config=lora,
        callbacks=[cb],
    )
    return trainer, timer


@torch.no_grad()
def probe_competence(model: Any, hf_tok: Any, task: Task, probes: list[Probe]) -> float:
    """Greedy exact-match rate of ``model`` on the role's fixed probes (llm_runs'
    evaluation: the same prompts, targets and output length)."""
    role = probes[0].role
    n = task.out_len[role]
    prompts = [BOS + task.prompt(role, pb.problem, pb.upstream) for pb in probes]
    enc = hf_tok(prompts, return_tensors="pt", padding=True, add_special_tokens=False)
    model.eval()
    out = model.generate(
        **enc,
        max_new_tokens=n,
        do_sample=False,
        pad_token_id=hf_tok.pad_token_id,
        eos_token_id=hf_tok.eos_token_id,
    )
    texts = hf_tok.batch_decode(out[:, enc["input_ids"].shape[1] :], skip_special_tokens=True)
    return float(np.mean([t[:n] == pb.target for t, pb in zip(texts, probes, strict=True)]))


def trainable_bytes(model: Any, opt: torch.optim.Optimizer | None) -> int:
    """Bytes of a model's parameters, their gradients and the optimizer state (exact)."""
    params = list({id(p): p for p in model.parameters()}.values())
    n = sum(p.numel() * p.element_size() for p in params)
    n += sum(p.grad.numel() * p.grad.element_size() for p in params if p.grad is not None)
    if opt is not None:
        for state in opt.state.values():
            n += sum(v.numel() * v.element_size() for v in state.values() if torch.is_tensor(v))
    return n
