"""One root exception for the whole toolkit.

Every error a user can cause (a bad spec, config, run log, data file or output folder) is an
:class:`AgentmotifsError`, so a script can catch them all with one ``except``. The packages'
errors (``simulate.SpecError``, ``llm_runs.ConfigError``, ``calibrate.DataError`` …) subclass it.
It also subclasses :class:`ValueError` so that existing ``except ValueError`` keeps working.
"""

from __future__ import annotations

__all__ = ["AgentmotifsError", "ConfigError", "OutputError"]


class AgentmotifsError(ValueError):
    """Root of every user-facing error in agentmotifs; CLIs print it as ``error: …``, exit 2."""


class OutputError(AgentmotifsError):
    """An output path that cannot be written (or would overwrite something without a flag)."""


class ConfigError(AgentmotifsError):
    """An invalid configuration (training, calibration, sweep); the message names the field."""
