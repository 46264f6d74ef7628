"""llm_runs — real joint LoRA training of motif-wired agents, with competence logs.

Light at import: only the torch-free log schema and configs load here; the training
modules (torch, transformers, peft) load on first use of :func:`train` and friends.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._arch import lora_targets as lora_targets
    from ._base_model import BASE_PRESETS as BASE_PRESETS
    from ._base_model import Base as Base
    from ._base_model import build_model as build_model
    from ._base_model import get_base as get_base
    from ._base_model import load_base as load_base
    from ._base_model import pretrain_base as pretrain_base
    from ._competence_plot import competence_figure as competence_figure
    from ._edges import pulse_windows as pulse_windows
    from ._policy import MultiAdapter as MultiAdapter
    from ._steps import rl_step as rl_step
    from ._sweep import run_sweep as run_sweep
    from ._task_registry import get_task as get_task
    from ._tasks import register_task as register_task
    from ._tokenizer import CharTokenizer as CharTokenizer
    from ._tokenizer import train_bpe as train_bpe
    from ._train import setup_training as setup_training
    from ._train import train as train

from . import config as config
from . import runlog as runlog
from ._regime import observed_regime as observed_regime
from ._runfolder import CKPT_FILE as CKPT_FILE
from ._runfolder import LOCK_FILE as LOCK_FILE
from ._runfolder import RunLock as RunLock
from ._runfolder import writer_gone as writer_gone
from .config import ConfigError as ConfigError
from .config import SweepConfig as SweepConfig
from .config import TrainConfig as TrainConfig
from .config import load_config as load_config
from .config import save_config as save_config
from .runlog import RunLog as RunLog
from .runlog import RunLogError as RunLogError
from .runlog import RunLogWarning as RunLogWarning
from .runlog import competence_table as competence_table
from .runlog import read_run as read_run
from .runlog import read_signals as read_signals

_LAZY = {
    "train": ("._train", "train"),
    "get_base": ("._base_model", "get_base"),
    "load_base": ("._base_model", "load_base"),
    "pretrain_base": ("._base_model", "pretrain_base"),
    "get_task": ("._task_registry", "get_task"),
    "run_sweep": ("._sweep", "run_sweep"),
    "competence_figure": ("._competence_plot", "competence_figure"),
    "register_task": ("._tasks", "register_task"),
    "Base": ("._base_model", "Base"),
    "BASE_PRESETS": ("._base_model", "BASE_PRESETS"),
    "build_model": ("._base_model", "build_model"),
    "lora_targets": ("._arch", "lora_targets"),
    "MultiAdapter": ("._policy", "MultiAdapter"),
    "CharTokenizer": ("._tokenizer", "CharTokenizer"),
    "train_bpe": ("._tokenizer", "train_bpe"),
    "setup_training": ("._train", "setup_training"),
    "rl_step": ("._steps", "rl_step"),
    "pulse_windows": ("._edges", "pulse_windows"),  # torch-free (numpy, simulate)
}


def __getattr__(name: str) -> Any:
    """Load the torch-side entry points on first access (keeps ``import llm_runs`` light)."""
    if name in _LAZY:
        import importlib

        mod, attr = _LAZY[name]
        return getattr(importlib.import_module(mod, __name__), attr)
    raise AttributeError(f"module 'llm_runs' has no attribute {name!r}")
