"""Several LoRA adapters (one per agent) on one frozen base: sampling and log-probs.

peft's active-adapter switching is a trap: ``set_adapter(a)`` marks only ``a`` trainable
(``requires_grad=False`` on every other adapter), so a loss summed over several adapters'
forwards and backpropagated once reaches only the adapter active at backward time. This
class therefore runs forward *and* backward per agent (:meth:`MultiAdapter.backward`), and
the optimizer holds every adapter's parameters. ``tests/llm_runs`` checks that gradients
reach every adapter and only its own parameters.
"""

from __future__ import annotations

import contextlib
import inspect
import warnings
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Literal, overload

import torch

from ._arch import lora_targets
from ._base_model import Base

__all__ = ["Encoded", "MultiAdapter"]


@dataclass
class Encoded:
    """Left-padded prompts: ``ids``, ``mask``, ``pos``, each shape (N, P) long."""

    ids: torch.Tensor
    mask: torch.Tensor
    pos: torch.Tensor


class MultiAdapter:
    """A peft model with one LoRA adapter per agent name.

    Args:
        base: The frozen base (its model is wrapped in place).
        agents: Adapter names (valid Python identifiers, e.g. ``X`` or ``X_0``).
        r: LoRA rank. alpha: LoRA alpha. dropout: LoRA dropout.
        target_modules: Module names to adapt (None: the base's own ``lora_targets``, else
            per architecture, :func:`~llm_runs._arch.lora_targets`); the ones used are
            ``target_modules``.
        seed: Seed of the adapters' initial A matrices (B starts at zero).
        device: torch device string; on CUDA forwards run under bf16 autocast.
    """

    def __init__(
        self,
        base: Base,
        agents: Sequence[str],
        *,
        r: int = 8,
        alpha: float = 16.0,
        dropout: float = 0.0,
        target_modules: list[str] | None = None,
        seed: int = 0,
        device: str = "cpu",
    ) -> None:
        from peft import LoraConfig, get_peft_model
        from peft.tuners.lora import LoraLayer

        if len(set(agents)) != len(agents) or not agents:
            raise ValueError(f"agent names must be unique and non-empty, got {list(agents)}")
        default_targets, fan = lora_targets(base.model)
        default_targets = base.lora_targets or default_targets  # a packaged base's own
        self.target_modules: list[str] | str = list(target_modules or []) or default_targets
        cfg = LoraConfig(
            r=r,
            lora_alpha=alpha,  # pyright: ignore[reportArgumentType]
            lora_dropout=dropout,
            bias="none",
            target_modules=self.target_modules,
            fan_in_fan_out=fan,
        )
        torch.manual_seed(seed)
        self.tok = base.tokenizer
        self.device = torch.device(device)
        self.agents = list(agents)
        with warnings.catch_warnings():  # transformers' deprecation notes inside peft
            warnings.simplefilter("ignore", FutureWarning)
            self.model = get_peft_model(base.model, cfg, adapter_name=self.agents[0])
            for a in self.agents[1:]:
                self.model.add_adapter(a, cfg)
        self.model.to(self.device)
        self.model.eval()  # no dropout in the base; LoRA dropout is off by default
        self.params: dict[str, list[torch.nn.Parameter]] = {
            a: [p for n, p in self.model.named_parameters() if f".{a}." in n and "lora_" in n]
            for a in self.agents
        }
        #: The model's LoRA layers (where :mod:`llm_runs._mixed` routes rows to members).
        self.lora_layers = [m for m in self.model.modules() if isinstance(m, LoraLayer)]
        for a, ps in self.params.items():
            if not ps:
                raise RuntimeError(f"adapter {a!r} has no LoRA parameters")
            for p in ps:
                p.requires_grad_(True)
        self._autocast = self.device.type == "cuda"
        # transformers >= 5.2x renamed ``past_key_values`` to ``cache`` (inputs and outputs)
        fwd = inspect.signature(type(base.model).forward).parameters
        self._cache_kw = "cache" if "cache" in fwd else "past_key_values"
        # the LM head only where logits are read (the prompt's last position, the completion):
        # with a 49k vocabulary most of a short prompt's forward is that projection
        self._keep = "logits_to_keep" in fwd

    # -- helpers ------------------------------------------------------------------------
    def autocast(self) -> contextlib.AbstractContextManager[Any]:
        """bf16 autocast on CUDA, no-op on CPU."""
        if self._autocast:
            return torch.autocast("cuda", dtype=torch.bfloat16)
        return contextlib.nullcontext()

    def activate(self, agent: str) -> None:
        """Make ``agent``'s adapter the active (and trainable) one."""
        self.model.set_adapter(agent)

    @contextlib.contextmanager
    def base_only(self) -> Iterator[None]:
        """Run the frozen base without any adapter (reference policy for the KL)."""
        with self.model.disable_adapter():
            yield

    def encode(self, prompts: Sequence[str]) -> Encoded:
        """Left-pad the prompts' token ids (the tokenizer's ``encode_prompt``: ``[bos] +
        prompt``, or the chat template's user turn) to one length."""
        seqs = [self.tok.encode_prompt(p) for p in prompts]
        length = max(len(s) for s in seqs)
        ids = torch.full((len(seqs), length), self.tok.pad_id, dtype=torch.long)
        mask = torch.zeros((len(seqs), length), dtype=torch.long)
        for i, s in enumerate(seqs):
            ids[i, length - len(s) :] = torch.tensor(s)
            mask[i, length - len(s) :] = 1
        pos = (mask.cumsum(1) - 1).clamp(min=0)
        return Encoded(ids.to(self.device), mask.to(self.device), pos.to(self.device))

    def decode(self, comp: torch.Tensor) -> list[str]:
        """Completion token ids (N, T) to strings."""
        return [self.tok.decode(row) for row in comp.tolist()]

    # -- sampling ---------------------------------------------------------------------------
    @overload
    def generate(
        self,
        agent: str,
        enc: Encoded,
        n_new: int,
        *,
        greedy: bool = True,
        temperature: float = 1.0,
        generator: torch.Generator | None = None,
        with_logp: Literal[False] = False,
        noise: torch.Tensor | None = None,
    ) -> torch.Tensor: ...

    @overload
    def generate(
        self,
        agent: str,
        enc: Encoded,
        n_new: int,
        *,
        greedy: bool = True,
        temperature: float = 1.0,
        generator: torch.Generator | None = None,
        with_logp: Literal[True],
        noise: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor]: ...

    @torch.no_grad()
    def generate(
        self,
        agent: str,
        enc: Encoded,
        n_new: int,
        *,
        greedy: bool = True,
        temperature: float = 1.0,
        generator: torch.Generator | None = None,
        with_logp: bool = False,
        noise: torch.Tensor | None = None,
    ) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]:
        """Sample ``n_new`` tokens per prompt with ``agent``'s adapter (KV cache).

        Args:
            agent: Adapter to sample with.
            enc: Encoded prompts, (N, P).
            n_new: Tokens to generate.
            greedy: Argmax decoding instead of sampling.
            temperature: Sampling temperature (logits are divided by it).
            generator: Random generator of the sampling.
            with_logp: Also return each generated token's log-probability under the
                sampling policy, ``log_softmax(logits / temperature)`` of the very logits it
                was drawn from (what :meth:`token_logprobs` computes for these tokens with a
                separate forward, without one).
            noise: Pre-drawn Exp(1) noise (n_new, N, V) to sample with instead of
                ``generator``: token t of row i is ``argmax(p / noise[t, i])``, the very
                draw ``torch.multinomial(p, 1)`` makes from its own noise (an exponential
                race), so noise drawn in another order reproduces another batching's tokens.

        Returns:
            Completion token ids, shape (N, n_new); with ``with_logp`` the pair
            ``(ids, logp)``, ``logp`` float32 of the same shape.
        """
        self.activate(agent)
        mask, pos = enc.mask, enc.pos
        out_tokens: list[torch.Tensor] = []
        out_logp: list[torch.Tensor] = []
        with self.autocast():
            keep = {"logits_to_keep": 1} if self._keep else {}
            out = self.model(
                input_ids=enc.ids, attention_mask=mask, position_ids=pos, use_cache=True, **keep
            )
            for t in range(n_new):
                logits = out.logits[:, -1].float()
                if greedy:
                    nxt = logits.argmax(-1)
                else:
                    probs = torch.softmax(logits / temperature, -1)
                    if noise is None:
                        nxt = torch.multinomial(probs, 1, generator=generator).squeeze(1)
                    else:
                        nxt = (probs / noise[t]).argmax(-1)
                out_tokens.append(nxt)
                if with_logp:
                    logsm = torch.log_softmax(logits / temperature, -1)
                    out_logp.append(logsm.gather(-1, nxt[:, None]).squeeze(-1))
                if t == n_new - 1:
                    break
                mask = torch.cat([mask, torch.ones_like(mask[:, :1])], 1)
                pos = pos[:, -1:] + 1
                past = {self._cache_kw: getattr(out, self._cache_kw, None)}
                out = self.model(
                    input_ids=nxt[:, None],
                    attention_mask=mask,
                    position_ids=pos,
                    use_cache=True,
                    **past,
                )
        ids = torch.stack(out_tokens, 1)
        return (ids, torch.stack(out_logp, 1)) if with_logp else ids

    # -- scoring ------------------------------------------------------------------------
    def token_logprobs(
        self, enc: Encoded, comp: torch.Tensor, *, temperature: float = 1.0
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Log-probs of ``comp`` under the *active* adapter (differentiable).

        Args:
            enc: Encoded prompts, (N, P).
            comp: Completion ids, (N, T).
            temperature: Logits are divided by it (the sampling policy).

        Returns:
            ``(logp, entropy, argmax_ok)``, each (N, T): per-token log-probability (nats),
            entropy of the predictive distribution (nats), and whether the argmax equals the
            token (teacher-forced greedy check).
        """
        T = comp.shape[1]  # prompt length P: the logits read are positions P-1 .. P+T-2
        ids = torch.cat([enc.ids, comp], 1)
        mask = torch.cat([enc.mask, torch.ones_like(comp)], 1)
        pos = torch.cat([enc.pos, enc.pos[:, -1:] + torch.arange(1, T + 1, device=comp.device)], 1)
        keep = {"logits_to_keep": T + 1} if self._keep else {}  # positions P-1 .. P+T-1
        with self.autocast():
            logits = self.model(input_ids=ids, attention_mask=mask, position_ids=pos, **keep).logits
        first = logits.shape[1] - (T + 1)  # 0 with logits_to_keep, else P - 1
        logits = logits[:, first : first + T].float() / temperature
        logsm = torch.log_softmax(logits, -1)
        logp = logsm.gather(-1, comp[..., None]).squeeze(-1)
        entropy = -(logsm.exp() * logsm).sum(-1)
        return logp, entropy, logits.argmax(-1) == comp

    def backward(self, agent: str, loss: torch.Tensor) -> None:
        """Backpropagate ``loss`` (computed with ``agent`` active) into its adapter."""
        loss.backward()

    def adapter_state(self) -> dict[str, dict[str, torch.Tensor]]:
        """Copies of every adapter's parameters, by agent then parameter name."""
        names = {id(p): n for n, p in self.model.named_parameters()}
        return {a: {names[id(p)]: p.detach().clone() for p in ps} for a, ps in self.params.items()}

    def load_adapter_state(self, state: dict[str, dict[str, torch.Tensor]]) -> None:
        """Inverse of :meth:`adapter_state`."""
        named = dict(self.model.named_parameters())
        with torch.no_grad():
            for tensors in state.values():
                for n, t in tensors.items():
                    named[n].copy_(t.to(named[n].device))
