"""Validated training configs that round-trip through JSON and YAML (torch-free).

A :class:`TrainConfig` is everything a run needs; ``TrainConfig.from_dict(cfg.to_dict())``
equals ``cfg``, and :func:`save_config` / :func:`load_config` write and read ``.json``,
``.yaml`` or ``.yml``. Unknown keys and bad values raise :class:`ConfigError` naming the
dotted field, e.g. ``rl.algo``. Example YAML::

    task: {name: math}
    network: {motif: I1, gate: AND, K: 0.5, n: 4.0, default_mechanism: coupling}
    rl: {algo: grpo, credit: shared, batch: 32}
    steps: 300
    seed: 1
"""

from __future__ import annotations

import dataclasses
import json
import math
import types
import typing
from collections.abc import Mapping
from pathlib import Path
from typing import Any

__all__ = [
    "ALGOS",
    "CREDITS",
    "MECHANISMS",
    "PRESETS",
    "ConfigError",
    "EdgeConfig",
    "LoraConfig",
    "ModelConfig",
    "NetworkConfig",
    "RLConfig",
    "ShiftConfig",
    "SpuriousConfig",
    "SweepConfig",
    "TaskConfig",
    "TrainConfig",
    "load_config",
    "load_sweep",
    "save_config",
    "set_dotted",
]

PRESETS = ("micro", "tiny", "small", "medium")
ALGOS = ("reinforce", "grpo", "ppo")
CREDITS = ("shared", "role", "discounted")
MECHANISMS = ("budget", "credit", "coupling")
TASKS = ("math", "rag")


class ConfigError(ValueError):
    """An invalid config; the message names the dotted field."""


def _check(cond: bool, field: str, msg: str) -> None:
    if not cond:
        raise ConfigError(f"{field}: {msg}")


def _num(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)


def _pos_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and v > 0


@dataclasses.dataclass
class ModelConfig:
    """Base model. ``base`` (a local transformers checkpoint) overrides the preset.

    Attributes:
        preset: ``micro`` (tests), ``tiny`` (CPU default, ~1.2M params), ``small``, ``medium``.
        base: Path of a local checkpoint to load instead of pretraining one.
        base_cache: Folder of cached pretrained bases (default ``~/.cache/agentmotifs``).
        pretrain_steps: Pretraining steps (None: the preset's default).
        pretrain_batch: Sequences per pretraining step.
        pretrain_lr: Peak AdamW learning rate of pretraining.
    """

    preset: str = "tiny"
    base: str | None = None
    base_cache: str | None = None
    pretrain_steps: int | None = None
    pretrain_batch: int = 64
    pretrain_lr: float = 3e-3

    def validate(self, p: str) -> None:
        _check(self.preset in PRESETS, f"{p}.preset", f"must be one of {PRESETS}")
        _check(
            self.pretrain_steps is None or _pos_int(self.pretrain_steps),
            f"{p}.pretrain_steps",
            "must be a positive int or null",
        )
        _check(_pos_int(self.pretrain_batch), f"{p}.pretrain_batch", "must be a positive int")
        _check(_num(self.pretrain_lr) and self.pretrain_lr > 0, f"{p}.pretrain_lr", "must be > 0")


@dataclasses.dataclass
class LoraConfig:
    """One LoRA adapter per agent. ``target_modules`` None: attention + MLP projections."""

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
    """

    rate: float = 0.0
    length: int = 20
    mode: str = "flip"
    starts: list[int] = dataclasses.field(default_factory=list)

    def validate(self, p: str) -> None:
        _check(_num(self.rate) and 0 <= self.rate <= 1, f"{p}.rate", "must be in [0, 1]")
        _check(_pos_int(self.length), f"{p}.length", "must be a positive int")
        _check(self.mode in ("flip", "random"), f"{p}.mode", "must be 'flip' or 'random'")
        _check(
            all(isinstance(s, int) and s >= 0 for s in self.starts),
            f"{p}.starts",
            "must be ints >= 0",
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
        from simulate.spec import SpecError

        try:
            self.network_spec()
        except SpecError as err:
            raise ConfigError(f"{p}: {err}") from None

    def network_spec(self) -> Any:
        """The :class:`simulate.spec.NetworkSpec` this config describes."""
        from simulate.spec import NetworkSpec, ffl_spec, load_spec

        if self.spec is not None:
            return NetworkSpec.from_dict(self.spec)
        if self.spec_path is not None:
            return load_spec(self.spec_path)
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
        kl_coef: Weight of the per-token KL penalty to the frozen base (0: only logged).
    """

    algo: str = "reinforce"
    credit: str = "role"
    discount: float = 0.5
    batch: int = 32
    group: int = 1
    warmup_steps: int = 0
    warmup_batch: int = 32
    lr: float = 1e-3
    temperature: float = 1.0
    ppo_epochs: int = 2
    clip: float = 0.2
    kl_coef: float = 0.0
    entropy_coef: float = 0.0
    baseline_decay: float = 0.9
    grad_clip: float = 1.0

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
        for name in ("discount", "baseline_decay"):
            v = getattr(self, name)
            _check(_num(v) and 0 <= v <= 1, f"{p}.{name}", "must be in [0, 1]")
        for name in ("kl_coef", "entropy_coef"):
            v = getattr(self, name)
            _check(_num(v) and v >= 0, f"{p}.{name}", "must be >= 0")


@dataclasses.dataclass
class TrainConfig:
    """A whole training run.

    Attributes:
        steps: Optimizer steps in total (warm-up included).
        eval_every: Probe/test evaluation period (steps); also at step 0 and the end.
        ckpt_every: Checkpoint period (steps); 0 disables checkpoints.
        pool_size: Adapters per role (Pool-of-Agents); rollouts draw a member per sample.
        device: ``cpu``, ``cuda`` or ``cuda:N``. bf16 autocast is used on CUDA.
        threads: torch CPU threads (None: torch's default). 1 by default: the tiny model's
            matmuls gain little from a second thread, and on a shared 2-core machine a
            second thread was 2-4x slower under load.
    """

    task: TaskConfig = dataclasses.field(default_factory=TaskConfig)
    model: ModelConfig = dataclasses.field(default_factory=ModelConfig)
    lora: LoraConfig = dataclasses.field(default_factory=LoraConfig)
    network: NetworkConfig = dataclasses.field(default_factory=NetworkConfig)
    rl: RLConfig = dataclasses.field(default_factory=RLConfig)
    steps: int = 600
    eval_every: int = 25
    ckpt_every: int = 50
    seed: int = 0
    pool_size: int = 1
    device: str = "cpu"
    threads: int | None = 1
    name: str | None = None

    def __post_init__(self) -> None:
        self.validate()

    def validate(self) -> None:
        """Check every field; raise :class:`ConfigError` on the first bad one."""
        self.task.validate("task")
        self.model.validate("model")
        self.lora.validate("lora")
        self.network.validate("network")
        self.rl.validate("rl")
        _check(_pos_int(self.steps), "steps", "must be a positive int")
        _check(_pos_int(self.eval_every), "eval_every", "must be a positive int")
        _check(
            isinstance(self.ckpt_every, int) and self.ckpt_every >= 0,
            "ckpt_every",
            "must be an int >= 0",
        )
        _check(
            isinstance(self.seed, int) and not isinstance(self.seed, bool), "seed", "must be an int"
        )
        _check(_pos_int(self.pool_size), "pool_size", "must be a positive int")
        _check(
            self.device == "cpu" or self.device.startswith("cuda"),
            "device",
            "must be 'cpu' or 'cuda[:N]'",
        )
        _check(
            self.threads is None or _pos_int(self.threads),
            "threads",
            "must be a positive int or null",
        )

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready nested dict; :meth:`from_dict` inverts it exactly."""
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> TrainConfig:
        """Build and validate from a nested mapping (unknown keys are errors)."""
        return _build(cls, data, "")


def _build(cls: Any, data: Any, where: str) -> Any:
    if not isinstance(data, Mapping):
        raise ConfigError(f"{where or 'config'}: must be a mapping, got {type(data).__name__}")
    hints = typing.get_type_hints(cls)
    names = {f.name for f in dataclasses.fields(cls)}
    unknown = set(data) - names
    if unknown:
        raise ConfigError(f"{where or 'config'}: unknown field(s) {sorted(unknown)}")
    kwargs: dict[str, Any] = {}
    for key, value in data.items():
        field = f"{where}.{key}" if where else key
        hint = hints[key]
        if dataclasses.is_dataclass(hint):
            kwargs[key] = _build(hint, value, field)
        elif key == "edges" and cls is NetworkConfig:
            if not isinstance(value, Mapping):
                raise ConfigError(f"{field}: must be a mapping 'X->Y' -> edge config")
            kwargs[key] = {k: _build(EdgeConfig, v, f"{field}[{k}]") for k, v in value.items()}
        else:
            if isinstance(hint, types.UnionType) and float in hint.__args__ and _num(value):
                value = float(value)
            elif hint is float and _num(value):
                value = float(value)
            kwargs[key] = value
    try:
        return cls(**kwargs) if cls is TrainConfig else _validated(cls, kwargs, where)
    except TypeError as err:
        raise ConfigError(f"{where or 'config'}: {err}") from None


def _validated(cls: Any, kwargs: dict[str, Any], where: str) -> Any:
    obj = cls(**kwargs)
    obj.validate(where or cls.__name__)
    return obj


def _read(path: str | Path) -> Any:
    p = Path(path)
    if not p.exists():
        raise ConfigError(f"config file not found: {p}")
    try:
        if p.suffix.lower() in (".yaml", ".yml"):
            import yaml

            return yaml.safe_load(p.read_text())
        return json.loads(p.read_text())
    except Exception as err:  # parse errors of either format
        raise ConfigError(f"{p}: cannot parse ({err})") from None


def _write(data: Any, path: str | Path) -> Path:
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    if p.suffix.lower() in (".yaml", ".yml"):
        import yaml

        p.write_text(yaml.safe_dump(data, sort_keys=False))
    else:
        p.write_text(json.dumps(data, indent=2) + "\n")
    return p


def load_config(path: str | Path) -> TrainConfig:
    """Read a :class:`TrainConfig` from ``.json``/``.yaml``/``.yml``."""
    return TrainConfig.from_dict(_read(path))


def save_config(cfg: TrainConfig | SweepConfig, path: str | Path) -> Path:
    """Write a config as JSON or YAML (chosen by suffix)."""
    return _write(cfg.to_dict(), path)


def set_dotted(data: dict[str, Any], key: str, value: Any) -> None:
    """Set ``data["rl"]["lr"] = value`` for ``key = "rl.lr"`` (creating sub-dicts)."""
    parts = key.split(".")
    node = data
    for part in parts[:-1]:
        node = node.setdefault(part, {})
        if not isinstance(node, dict):
            raise ConfigError(f"{key}: {part!r} is not a section")
    node[parts[-1]] = value


@dataclasses.dataclass
class SweepConfig:
    """Seeds x grid over a base config.

    Attributes:
        base: The base run config (a :class:`TrainConfig` dict).
        grid: Dotted field -> list of values, e.g. ``{"network.motif": ["C1", "I1"]}``.
        seeds: Seeds; every grid point runs once per seed.
        backend: ``local`` (process pool) or ``ray``.
        workers: Parallel runs (local backend).
        address: Ray cluster address (None: start a local instance).
        cpus_per_run: Ray CPU resource per run. gpus_per_run: Ray GPU resource per run.
        out: Folder receiving one run folder per (grid point, seed).
    """

    base: dict[str, Any] = dataclasses.field(default_factory=dict)
    grid: dict[str, list[Any]] = dataclasses.field(default_factory=dict)
    seeds: list[int] = dataclasses.field(default_factory=lambda: [0])
    backend: str = "local"
    workers: int = 1
    address: str | None = None
    cpus_per_run: float = 1.0
    gpus_per_run: float = 0.0
    out: str = "runs/sweep"

    def __post_init__(self) -> None:
        _check(self.backend in ("local", "ray"), "backend", "must be 'local' or 'ray'")
        _check(_pos_int(self.workers), "workers", "must be a positive int")
        _check(
            bool(self.seeds) and all(isinstance(s, int) for s in self.seeds),
            "seeds",
            "must be a non-empty list of ints",
        )
        for k, v in self.grid.items():
            _check(isinstance(v, list) and bool(v), f"grid.{k}", "must be a non-empty list")
        for cfg in self.configs():
            cfg.validate()

    def configs(self) -> list[TrainConfig]:
        """The expanded run configs, named ``<key=value,...>-s<seed>``."""
        import copy
        import itertools

        keys = list(self.grid)
        out = []
        for values in itertools.product(*(self.grid[k] for k in keys)):
            for seed in self.seeds:
                d = copy.deepcopy(self.base)
                for k, v in zip(keys, values, strict=True):
                    set_dotted(d, k, v)
                d["seed"] = seed
                label = ",".join(
                    f"{k.split('.')[-1]}={v}" for k, v in zip(keys, values, strict=True)
                )
                d["name"] = f"{label + '-' if label else ''}s{seed}"
                out.append(TrainConfig.from_dict(d))
        return out

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict."""
        return dataclasses.asdict(self)


def load_sweep(path: str | Path) -> SweepConfig:
    """Read a :class:`SweepConfig` from JSON/YAML."""
    data = _read(path)
    if not isinstance(data, Mapping):
        raise ConfigError(f"{path}: a sweep config must be a mapping")
    names = {f.name for f in dataclasses.fields(SweepConfig)}
    unknown = set(data) - names
    if unknown:
        raise ConfigError(f"sweep: unknown field(s) {sorted(unknown)}")
    try:
        return SweepConfig(**data)
    except TypeError as err:
        raise ConfigError(f"sweep: {err}") from None
