"""Architectures of the bases built here (GPT-2, Llama, Qwen2 at the preset sizes) and the
LoRA target modules of a model, chosen per model type.

Torch-free at import: transformers and peft are imported inside the functions.
"""

from __future__ import annotations

from typing import Any

from simulate.common import ConfigError

from ._config_sections import ARCHS

__all__ = ["BASE_PRESETS", "GPT2_LORA_TARGETS", "N_POSITIONS", "build_model", "lora_targets"]

#: Shapes and default pretraining steps per preset (parameters approximate, GPT-2 with the
#: character tokenizer; ``n_embd`` is the hidden size, ``n_head`` the attention heads).
BASE_PRESETS: dict[str, dict[str, int]] = {
    "micro": {"n_embd": 32, "n_layer": 2, "n_head": 2, "steps": 60},  # ~30k, tests
    "tiny": {"n_embd": 128, "n_layer": 4, "n_head": 4, "steps": 2000},  # ~0.8M, CPU
    "small": {"n_embd": 256, "n_layer": 8, "n_head": 8, "steps": 3000},  # ~6.3M, GPU
    "medium": {"n_embd": 512, "n_layer": 8, "n_head": 8, "steps": 4000},  # ~25M, GPU
}
#: Longest sequence (prompt + completion, in tokens) of the bases built here.
N_POSITIONS = 96

#: GPT-2's LoRA targets: attention and MLP projections. Wider than peft's default for GPT-2
#: (``c_attn`` only) and kept so: every GPT-2 run made so far adapted these three, and their
#: checkpoints resume only onto the same adapter layout.
GPT2_LORA_TARGETS = ["c_attn", "c_proj", "c_fc"]


def build_model(preset: str, vocab: int, arch: str = "gpt2") -> Any:
    """An untrained causal LM of a base preset, built from its transformers config.

    Special ids are ours: ``<pad>`` 0, ``<bos>`` 1, ``<eos>`` 2 (both tokenizers built here
    put them there). Dropout is off everywhere.

    Args:
        preset: Size, a key of :data:`BASE_PRESETS`.
        vocab: Vocabulary size.
        arch: ``gpt2`` (``GPT2LMHeadModel``, learned positions), ``llama``
            (``LlamaForCausalLM``: RMSNorm, rotary positions, SwiGLU MLP) or ``qwen2``
            (``Qwen2ForCausalLM``: as Llama plus q/k/v biases, grouped-query attention with
            half as many key/value heads, tied embeddings as in Qwen2-0.5B).

    Returns:
        The model (training mode, float32, on the CPU).

    Raises:
        ConfigError: An unknown preset or architecture.
    """
    if preset not in BASE_PRESETS:
        raise ConfigError(f"unknown preset {preset!r}; choose from {list(BASE_PRESETS)}")
    if arch not in ARCHS:
        raise ConfigError(f"unknown architecture {arch!r}; choose from {list(ARCHS)}")
    p = BASE_PRESETS[preset]
    ids: dict[str, Any] = {"bos_token_id": 1, "eos_token_id": 2, "pad_token_id": 0}
    if arch == "gpt2":
        from transformers import GPT2Config, GPT2LMHeadModel

        cfg = GPT2Config(
            vocab_size=vocab,
            n_positions=N_POSITIONS,
            n_embd=p["n_embd"],
            n_layer=p["n_layer"],
            n_head=p["n_head"],
            resid_pdrop=0.0,
            embd_pdrop=0.0,
            attn_pdrop=0.0,
            **ids,
        )
        return GPT2LMHeadModel(cfg)
    shape: dict[str, Any] = {
        "vocab_size": vocab,
        "hidden_size": p["n_embd"],
        "intermediate_size": 4 * p["n_embd"],
        "num_hidden_layers": p["n_layer"],
        "num_attention_heads": p["n_head"],
        "max_position_embeddings": N_POSITIONS,
        "attention_dropout": 0.0,
        **ids,
    }
    if arch == "llama":
        from transformers import LlamaConfig, LlamaForCausalLM

        return LlamaForCausalLM(
            LlamaConfig(**shape, num_key_value_heads=p["n_head"], tie_word_embeddings=False)
        )
    from transformers import Qwen2Config, Qwen2ForCausalLM

    kv = max(1, p["n_head"] // 2)
    return Qwen2ForCausalLM(Qwen2Config(**shape, num_key_value_heads=kv, tie_word_embeddings=True))


def lora_targets(model: Any) -> tuple[list[str] | str, bool]:
    """LoRA target modules of ``model`` and whether its linear layers store (in, out).

    GPT-2: :data:`GPT2_LORA_TARGETS` (its ``Conv1D`` layers, fan-in-fan-out). Any other
    model type: peft's default modules for that type (``q_proj``, ``v_proj`` for Llama,
    Qwen2, Mistral, ...), or every linear layer (``all-linear``) for a type peft has no
    default for.
    """
    kind = getattr(model.config, "model_type", "")
    if kind == "gpt2":
        return list(GPT2_LORA_TARGETS), True
    from peft.utils import TRANSFORMERS_MODELS_TO_LORA_TARGET_MODULES_MAPPING as defaults

    found = defaults.get(kind)
    return (list(found) if found else "all-linear"), False
