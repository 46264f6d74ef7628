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
import types
import typing
from collections.abc import Mapping
from pathlib import Path
from typing import Any

__all__ = [
    "ALGOS",
    "ARCHS",
    "CREDITS",
    "MECHANISMS",
    "PRESETS",
    "TOKENIZERS",
    "ConfigError",
    "EdgeConfig",
    "LoraConfig",
    "ModelConfig",
    "NetworkConfig",
    "PoolConfig",
    "RLConfig",
    "ShiftConfig",
    "SpuriousConfig",
    "SweepConfig",
    "TaskConfig",
    "TrainConfig",
    "field_type",
    "load_config",
    "load_sweep",
    "read_config_file",
    "save_config",
    "set_dotted",
    "set_from_text",
    "typed_value",
]

from simulate import parse_value, read_structured, write_json, write_text

from ._config_sections import ALGOS as ALGOS
from ._config_sections import ARCHS as ARCHS
from ._config_sections import CREDITS as CREDITS
from ._config_sections import MECHANISMS as MECHANISMS
from ._config_sections import PRESETS as PRESETS
from ._config_sections import TASKS as TASKS
from ._config_sections import TOKENIZERS as TOKENIZERS
from ._config_sections import ConfigError as ConfigError
from ._config_sections import EdgeConfig as EdgeConfig
from ._config_sections import LoraConfig as LoraConfig
from ._config_sections import ModelConfig as ModelConfig
from ._config_sections import NetworkConfig as NetworkConfig
from ._config_sections import PoolConfig as PoolConfig
from ._config_sections import RLConfig as RLConfig
from ._config_sections import ShiftConfig as ShiftConfig
from ._config_sections import SpuriousConfig as SpuriousConfig
from ._config_sections import TaskConfig as TaskConfig
from ._config_sections import _check, _num, _pos_int


@dataclasses.dataclass
class TrainConfig:
    """A whole training run.

    Attributes:
        steps: Optimizer steps in total (warm-up included).
        eval_every: Probe/test evaluation period (steps); also at step 0 and the end.
        ckpt_every: Checkpoint period (steps); 0 disables checkpoints.
        pool_size: Adapters per role K (Pool-of-Agents); rollouts draw a member per sample.
        pool: How pool members start, are sampled and learn (:class:`PoolConfig`).
        device: ``cpu``, ``cuda`` or ``cuda:N``. bf16 autocast is used on CUDA.
        threads: torch CPU threads (None: torch's default). 1 by default: the tiny model's
            matmuls gain little from a second thread, and on a shared 2-core machine a
            second thread was 2-4x slower under load.
        signals: Log the training signals per agent and optimizer step (``signals.jsonl``,
            docs/runlog.md); they only observe, the run is the same without them.
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
    pool: PoolConfig = dataclasses.field(default_factory=PoolConfig)
    device: str = "cpu"
    threads: int | None = 1
    signals: bool = True
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
            isinstance(self.seed, int)
            and not isinstance(self.seed, bool)
            and 0 <= self.seed < 2**32,
            "seed",
            "must be an int in [0, 2^32) (numpy's and torch's seed range)",
        )
        _check(_pos_int(self.pool_size), "pool_size", "must be a positive int")
        self.pool.validate("pool")
        if self.pool.update == "es":
            _check(
                self.pool_size >= 2 and self.pool_size % 2 == 0,
                "pool_size",
                "evolution strategies (pool.update es) need an even pool_size >= 2",
            )
            _check(
                self.rl.staleness == 0,
                "rl.staleness",
                "evolution strategies (pool.update es) are on-policy: staleness must be 0",
            )
            _check(
                self.rl.warmup_steps == 0,
                "rl.warmup_steps",
                "evolution strategies (pool.update es) have no supervised warm-up: use 0",
            )
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
        _check(isinstance(self.signals, bool), "signals", "must be true or false")

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
            kwargs[key] = _typed(hint, value, field)
    try:
        return cls(**kwargs) if cls is TrainConfig else _validated(cls, kwargs, where)
    except TypeError as err:
        raise ConfigError(f"{where or 'config'}: {err}") from None


def _typed(hint: Any, value: Any, field: str) -> Any:
    """A number converted to its field's type: any number to a float field; an integral
    float (``1e1``, ``10.0``) to an int field, so ``rl.staleness=1e1`` is the lag 10 (a
    non-integral one, ``2.5``, stays a float and fails the field's check). A word or a
    boolean in a number field (``rl.lr=yes``, ``1_0e-3``) is refused as what it is.

    Raises:
        ConfigError: a string or boolean where the field takes only numbers.
    """
    types_ = hint.__args__ if isinstance(hint, types.UnionType) else (hint,)
    if float in types_ and _num(value):
        return float(value)
    if int in types_ and isinstance(value, float) and _num(value) and value.is_integer():
        return int(value)
    numeric = {int, float} & set(types_)
    if numeric and set(types_) <= {int, float, type(None)} and isinstance(value, str | bool):
        kind = "a number" if float in numeric else "an integer"
        raise ConfigError(f"{field}: must be {kind}, got {value!r}")
    return value


def typed_value(key: str, value: Any) -> Any:
    """``value`` converted to the type of the dotted field ``key`` as a config file's value
    is (an integral float to an int field, a number to a float field); unchanged for an
    unknown field.

    Raises:
        ConfigError: a string or boolean where the field takes only numbers.
    """
    hint = field_type(key)
    return value if hint is None or dataclasses.is_dataclass(hint) else _typed(hint, value, key)


def field_type(key: str) -> Any:
    """The declared type of a dotted :class:`TrainConfig` field (None: not a known field)."""
    cls: Any = TrainConfig
    hint: Any = None
    for part in key.split("."):
        if not dataclasses.is_dataclass(cls):
            return None
        hint = typing.get_type_hints(cls).get(part)
        cls = hint
    return hint


def set_from_text(data: dict[str, Any], key: str, text: str) -> None:
    """``--set key=text``: the value parsed by :func:`simulate.parse_value` (YAML 1.2
    scalars: ``2e-3`` a float, ``yes``/``off`` strings, ``[1`` one error line), except that
    a text field (``name``, ``task.name``) keeps the text as written (``name=2024-01-01``)."""
    hint = field_type(key)
    texts = hint.__args__ if isinstance(hint, types.UnionType) else (hint,)
    value = parse_value(text, what=f"--set {key}")
    if str in texts and value is not None and not isinstance(value, str):
        value = text
    set_dotted(data, key, value)


def _validated(cls: Any, kwargs: dict[str, Any], where: str) -> Any:
    obj = cls(**kwargs)
    obj.validate(where or cls.__name__)
    return obj


def read_config_file(path: str | Path) -> Any:
    """The parsed content of a ``.json``/``.yaml``/``.yml`` config file (one-line
    :class:`ConfigError` when it is missing, unreadable or malformed)."""
    return read_structured(path, what="config file", error=ConfigError)


def _write(data: Any, path: str | Path) -> Path:
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    if p.suffix.lower() in (".yaml", ".yml"):
        import yaml

        write_text(p, yaml.safe_dump(data, sort_keys=False))
    else:
        write_json(p, data)
    return p


def load_config(path: str | Path) -> TrainConfig:
    """Read a :class:`TrainConfig` from ``.json``/``.yaml``/``.yml``."""
    return TrainConfig.from_dict(read_config_file(path))


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
    data = read_config_file(path)
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
