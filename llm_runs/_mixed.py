"""Pool members in one batch: each row of a forward runs through its own member's LoRA
adapter on the one shared base, so a role's K members sample (one forward per new token)
and train (one forward, one backward) together instead of in K small batches.

peft's own mixed batches (``adapter_names=[...]``, peft 0.21) loop over the adapters inside
every LoRA layer — K sub-batches per layer, their index lists rebuilt in Python at each
call — so their cost still grows with K. Here each LoRA layer gathers its members' stacked
A and B matrices per row once per block and applies them with two batched matmuls: the
number of operations per forward does not depend on K. Within a block peft's own adapter
path is off (``disable_adapter_layers``) and forward hooks on the LoRA layers add row i's
update ``s x A_m^T B_m^T`` (m = the row's member, s its LoRA scaling). LoRA dropout is not
applied, as in the rest of the package (the model stays in eval mode). Memory: one base
plus K adapters; a block adds the gathered matrices, N x (in + out) x r per LoRA layer.

Shapes: ``N`` rows, ``K`` members, ``T`` new tokens, ``V`` vocabulary size.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np
import torch

from ._policy import Encoded, MultiAdapter
from ._staleness import Snapshot, use_snapshot

__all__ = ["NOISE_BUDGET", "generate_mixed", "member_noise", "mixed_members"]

#: Largest pre-drawn sampling noise (bytes) of :func:`member_noise`; above it the mixed
#: batch samples step by step (the same distribution, another random stream).
NOISE_BUDGET = 64 * 2**20
#: peft's per-layer flag behind its ``disable_adapters`` property (see :func:`_adapter_path_off`).
_FLAG = "_disable_adapters"


def _hook(a_t: torch.Tensor, b_t: torch.Tensor) -> Callable[..., torch.Tensor]:
    """Forward hook adding ``x_i A_i^T (s B_i)^T`` per row; ``a_t`` (N, in, r), ``b_t``
    (N, r, out)."""
    n = a_t.shape[0]

    def hook(module: Any, args: tuple[Any, ...], out: torch.Tensor) -> torch.Tensor:
        x = args[0]
        if x.shape[0] != n:
            raise RuntimeError(f"a mixed-member block of {n} rows got a batch of {x.shape[0]}")
        h = x.reshape(n, -1, x.shape[-1]).to(a_t.dtype)
        delta = torch.bmm(torch.bmm(h, a_t), b_t)
        return out + delta.reshape(out.shape).to(out.dtype)

    return hook


@contextlib.contextmanager
def mixed_members(
    pol: MultiAdapter, names: Sequence[str], assign: np.ndarray, *, train: bool
) -> Iterator[None]:
    """Within the block, row i of each forward of ``pol.model`` uses ``names[assign[i]]``.

    Args:
        pol: The adapters.
        names: The members (K adapter names).
        assign: Member index of each row, shape (N,), ints in [0, K).
        train: Gradients reach the members' parameters. Run the forward *and* its backward
            inside the block: leaving it restores every parameter's ``requires_grad``
            as it was, and a parameter frozen before the backward gets no gradient. One
            backward per block (the gathered matrices are shared). A member without rows
            is left out: its ``.grad`` stays as it was (None: the optimizer skips it, as it
            skips a member without its own batch).

    Raises:
        ValueError: A LoRA layer other than a linear one (embedding, convolution).
        RuntimeError: A forward in the block whose batch is not N rows.
    """
    from peft.tuners.lora import Linear

    if any(not isinstance(layer, Linear) for layer in pol.lora_layers):
        raise ValueError("mixed-member batches need LoRA on linear layers only")
    assign = np.asarray(assign)
    present = np.unique(assign)  # a member without rows gets no gradient, not a zero one
    used = [names[int(k)] for k in present]
    idx = torch.as_tensor(np.searchsorted(present, assign), dtype=torch.long, device=pol.device)
    restore_layers = _adapter_path_off(pol)
    handles = []
    trainable = [p for name in used for p in pol.params[name]] if train else []
    grad_before = [p.requires_grad for p in trainable]
    try:
        for p in trainable:
            p.requires_grad_(True)
        with torch.set_grad_enabled(train):
            layers: list[Any] = pol.lora_layers
            for layer in layers:
                a = torch.stack([layer.lora_A[m].weight for m in used])[idx]  # (N, r, in)
                b = torch.stack([layer.lora_B[m].weight for m in used])[idx]  # (N, out, r)
                scale = [float(layer.scaling[m]) for m in used]
                if len(set(scale)) == 1:  # one LoRA config for all members: one multiply
                    b = b * scale[0]
                else:
                    b = b * torch.tensor(scale, dtype=b.dtype, device=b.device)[idx, None, None]
                hook = _hook(a.transpose(1, 2), b.transpose(1, 2))
                handles.append(layer.register_forward_hook(hook))
        yield
    finally:
        for h in handles:
            h.remove()
        restore_layers()
        for p, g in zip(trainable, grad_before, strict=True):
            p.requires_grad_(g)


def _adapter_path_off(pol: MultiAdapter) -> Callable[[], None]:
    """Switch peft's own adapter path off in every LoRA layer; returns the switch back.

    Each layer's ``_disable_adapters`` flag (what peft's ``disable_adapters`` property reads)
    is set and later restored, leaving every ``requires_grad`` as it is: peft's
    ``disable_adapter_layers`` / ``enable_adapter_layers`` would also walk every module and
    re-freeze every adapter, which cost a K = 8 pool about a fifth of its step. Where a peft
    version lacks the flag, its public switch is used (it re-applies the active adapter on
    the way back).
    """
    layers: list[Any] = pol.lora_layers
    if all(hasattr(layer, _FLAG) for layer in layers):
        before = [getattr(layer, _FLAG) for layer in layers]
        for layer in layers:
            setattr(layer, _FLAG, True)

        def restore() -> None:
            for layer, b in zip(layers, before, strict=True):
                setattr(layer, _FLAG, b)

        return restore
    tuner: Any = pol.model.base_model  # peft's LoraModel
    tuner.disable_adapter_layers()
    return tuner.enable_adapter_layers


def member_noise(
    assign: np.ndarray,
    n_new: int,
    vocab: int,
    generator: torch.Generator | None,
    *,
    device: torch.device,
) -> torch.Tensor | None:
    """Sampling noise for a mixed batch, drawn as the per-member batches draw theirs.

    The per-member path samples member 0's rows for all ``n_new`` steps, then member 1's,
    each step one ``torch.multinomial(p, 1)``, which draws Exp(1) noise shaped like ``p``
    and takes ``argmax(p / noise)``. Drawing that noise here in the same order and shapes
    (members ascending, then steps) and passing it to :meth:`MultiAdapter.generate` samples
    the tokens the per-member path samples (up to float rounding of ``p``) and leaves the
    generator where that path leaves it.

    Args:
        assign: Member index of each row, shape (N,).
        n_new: Tokens to generate (T).
        vocab: Vocabulary size V (the logits' width).
        generator: The sampling generator.
        device: Where the noise lives (the generator's device).

    Returns:
        Shape (T, N, V) float32, or None when it would exceed :data:`NOISE_BUDGET` bytes
        (then sample step by step: same distribution, another stream).
    """
    n = len(assign)
    if n_new * n * vocab * 4 > NOISE_BUDGET:
        return None
    noise = torch.empty((n_new, n, vocab), dtype=torch.float32, device=device)
    for k in np.unique(assign):
        rows = torch.as_tensor(np.nonzero(assign == k)[0], device=device)
        for t in range(n_new):
            q = torch.empty((rows.numel(), vocab), dtype=torch.float32, device=device)
            noise[t, rows] = q.exponential_(1, generator=generator)
    return noise


def generate_mixed(
    pol: MultiAdapter,
    names: Sequence[str],
    enc: Encoded,
    assign: np.ndarray,
    n_new: int,
    *,
    greedy: bool,
    temperature: float,
    generator: torch.Generator | None,
    stale: Snapshot | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Sample ``n_new`` tokens for every row with its member's adapter, in one batch.

    Args:
        pol: The adapters.
        names: The members (K adapter names).
        enc: Encoded prompts, (N, P).
        assign: Member index of each row, shape (N,).
        n_new: Tokens to generate.
        greedy: Argmax decoding.
        temperature: Sampling temperature.
        generator: Sampling generator (its stream consumed as :func:`member_noise` says).
        stale: Sample with the adapters of this snapshot (policy lag), if given.

    Returns:
        ``(ids, logp)``, each (N, n_new): the tokens and their log-probabilities under the
        sampling adapters (float32).
    """
    noise = None
    if not greedy:
        vocab = int(pol.model.get_output_embeddings().weight.shape[0])
        noise = member_noise(assign, n_new, vocab, generator, device=pol.device)
    with contextlib.ExitStack() as stack:
        for name in names:
            stack.enter_context(use_snapshot(pol, name, stale))
        stack.enter_context(mixed_members(pol, names, assign, train=False))
        return pol.generate(
            names[0],
            enc,
            n_new,
            greedy=greedy,
            temperature=temperature,
            generator=generator,
            with_logp=True,
            noise=noise,
        )
