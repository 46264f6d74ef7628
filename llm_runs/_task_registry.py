"""Look up a registered task by name, with the built-in tasks registered first.

:mod:`llm_runs._tasks` holds the task interface and the registry; the built-in tasks
(``_math``, ``_rag``) import it to register themselves. :func:`get_task` lives here, apart
from the interface, so that the interface never imports the tasks built on it.
"""

from __future__ import annotations

from typing import Any

from simulate.common import ConfigError

# register "math", "rag", their v1 forms and the tasks of a pretrained LLM ("math-lm", ...)
from . import _lm_tasks, _math, _rag  # noqa: F401
from ._tasks import TASKS, Task

__all__ = ["get_task"]


def get_task(
    name: str, *, seed: int = 0, roles: tuple[str, ...] | None = None, **options: Any
) -> Task:
    """Instantiate a registered task (``math``, ``rag``, ``math-lm`` or a user's).

    Args:
        name: The task's registered name (:func:`llm_runs.register_task`).
        seed: Seed of the task's problem generator.
        roles: The pipeline's roles (default the task's own).
        **options: Task-specific options.

    Returns:
        The task.

    Raises:
        ConfigError: No task is registered under ``name``.
    """
    if name not in TASKS:
        raise ConfigError(f"unknown task {name!r}; registered: {sorted(TASKS)}")
    return TASKS[name](seed=seed, roles=roles, **options)
