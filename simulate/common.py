"""What every package of agentmotifs shares, in one public home (plain Python, no JAX).

* errors: one root, :class:`AgentmotifsError` (a :class:`ValueError`), with
  :class:`ConfigError` and :class:`OutputError`;
* file helpers: atomic JSON/text writes, the UTC time stamp :func:`utc_now`, validating
  readers, output-folder checks and claims;
* the regime vocabulary: :class:`Regime`, :data:`REGIME_NAMES`, :data:`REGIME_SEVERITY` and the
  groups forecasts report, :data:`REGIME_GROUPS`;
* the forecast scores of sampled forecasts: :func:`crps_samples`, :func:`interval_hit`,
  :func:`grid_log_score`, :func:`randomized_pit`;
* the one vocabulary of value scales, :data:`SCALES` (``log``, ``log1p``, ``linear``), with
  :func:`scale_name` (reads the alias ``lin``), :func:`to_scale` and :func:`from_scale`;
* the one collapse rule for measured (real-run) competence curves, :func:`fall_collapse`
  (:data:`COLLAPSE_RULE` in words);
* :func:`lazy_exports`: a package namespace whose names load on first use (``simulate``,
  ``calibrate``).

``llm_runs`` and ``calibrate`` import these names from here (or from ``simulate``), never from
simulate's private modules; ``tests/test_boundaries.py`` checks that.

Example:
    >>> from simulate.common import REGIME_GROUPS, ConfigError, write_json
"""

from __future__ import annotations

from ._collapse import COLLAPSE_RULE as COLLAPSE_RULE
from ._collapse import PEAK_COLLAPSE_RULE as PEAK_COLLAPSE_RULE
from ._collapse import Collapse as Collapse
from ._collapse import fall_collapse as fall_collapse
from ._collapse import peak_collapse as peak_collapse
from ._errors import AgentmotifsError as AgentmotifsError
from ._errors import ConfigError as ConfigError
from ._errors import OutputError as OutputError
from ._io import atomic_dir as atomic_dir
from ._io import check_writable as check_writable
from ._io import jsonable as jsonable
from ._io import read_json_object as read_json_object
from ._io import read_structured as read_structured
from ._io import read_text as read_text
from ._io import save_figure as save_figure
from ._io import utc_now as utc_now
from ._io import write_json as write_json
from ._io import write_text as write_text
from ._lazy import lazy_exports as lazy_exports
from ._outputs import MARK_FILE as MARK_FILE
from ._outputs import PLOT_SUFFIXES as PLOT_SUFFIXES
from ._outputs import claim_file as claim_file
from ._outputs import claim_files as claim_files
from ._outputs import claim_folder as claim_folder
from ._outputs import folder_kind as folder_kind
from ._outputs import mark_output as mark_output
from ._regimes import REGIME_GROUPS as REGIME_GROUPS
from ._regimes import REGIME_NAMES as REGIME_NAMES
from ._regimes import REGIME_SEVERITY as REGIME_SEVERITY
from ._regimes import Regime as Regime
from ._regimes import regime_group as regime_group
from ._scales import SCALE_ALIASES as SCALE_ALIASES
from ._scales import SCALE_DOMAINS as SCALE_DOMAINS
from ._scales import SCALES as SCALES
from ._scales import from_scale as from_scale
from ._scales import in_scale_domain as in_scale_domain
from ._scales import scale_name as scale_name
from ._scales import to_scale as to_scale
from ._scores import crps_samples as crps_samples
from ._scores import grid_log_score as grid_log_score
from ._scores import interval_hit as interval_hit
from ._scores import randomized_pit as randomized_pit

__all__ = [
    "COLLAPSE_RULE",
    "MARK_FILE",
    "PEAK_COLLAPSE_RULE",
    "PLOT_SUFFIXES",
    "REGIME_GROUPS",
    "REGIME_NAMES",
    "REGIME_SEVERITY",
    "SCALES",
    "SCALE_ALIASES",
    "SCALE_DOMAINS",
    "AgentmotifsError",
    "Collapse",
    "ConfigError",
    "OutputError",
    "Regime",
    "atomic_dir",
    "check_writable",
    "claim_file",
    "claim_files",
    "claim_folder",
    "crps_samples",
    "fall_collapse",
    "folder_kind",
    "from_scale",
    "grid_log_score",
    "in_scale_domain",
    "interval_hit",
    "jsonable",
    "lazy_exports",
    "mark_output",
    "peak_collapse",
    "randomized_pit",
    "read_json_object",
    "read_structured",
    "read_text",
    "regime_group",
    "save_figure",
    "scale_name",
    "to_scale",
    "write_json",
    "write_text",
]
