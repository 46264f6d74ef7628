"""simulate — a JAX model of agent competences on signed regulatory networks.

The network spec, parameter grammar, errors, file helpers and regime vocabulary (also gathered in
:mod:`simulate.common`, the public home every package shares) are plain Python and load at once;
everything that needs JAX (kinetics, solvers, phase diagrams) loads on first use, so
``import simulate`` (and ``simulate.spec``) stays light for torch-side code."""

from __future__ import annotations

from typing import TYPE_CHECKING

from . import common as common
from . import spec as spec
from ._argparse import ArgumentParser as ArgumentParser
from ._collapse import COLLAPSE_RULE as COLLAPSE_RULE
from ._collapse import PEAK_COLLAPSE_RULE as PEAK_COLLAPSE_RULE
from ._collapse import Collapse as Collapse
from ._collapse import fall_collapse as fall_collapse
from ._collapse import fall_collapse_many as fall_collapse_many
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
from ._io import sibling as sibling
from ._io import write_json as write_json
from ._io import write_text as write_text
from ._lazy import lazy_exports
from ._outputs import MARK_FILE as MARK_FILE
from ._outputs import PLOT_SUFFIXES as PLOT_SUFFIXES
from ._outputs import claim_file as claim_file
from ._outputs import claim_files as claim_files
from ._outputs import claim_folder as claim_folder
from ._outputs import folder_kind as folder_kind
from ._outputs import mark_output as mark_output
from ._outputs import output_lock as output_lock
from ._param_names import check_param_value as check_param_value
from ._param_names import parse_param_name as parse_param_name
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
from ._sizes import MAX_BYTES as MAX_BYTES
from ._sizes import check_memory as check_memory
from ._sizes import memory_limit as memory_limit
from ._values import load_yaml as load_yaml
from ._values import parse_int as parse_int
from ._values import parse_number as parse_number
from ._values import parse_scalar as parse_scalar
from ._values import parse_value as parse_value
from .spec import FFL_SIGNS as FFL_SIGNS
from .spec import MOTIFS as MOTIFS
from .spec import EdgeSpec as EdgeSpec
from .spec import NetworkSpec as NetworkSpec
from .spec import SpecError as SpecError
from .spec import add_feedback as add_feedback
from .spec import ffl_spec as ffl_spec
from .spec import load_spec as load_spec
from .spec import resolve_spec as resolve_spec
from .spec import ring_spec as ring_spec
from .spec import save_spec as save_spec

if TYPE_CHECKING:
    from ._analysis import Stability as Stability
    from ._analysis import classify as classify
    from ._analysis import equilibrate as equilibrate
    from ._analysis import linear_stability as linear_stability
    from ._analysis import metrics as metrics
    from ._analysis import solution_stability as solution_stability
    from ._analysis import steady_state as steady_state
    from ._batch import stack_models as stack_models
    from ._boundary import Boundary as Boundary
    from ._boundary import find_boundaries as find_boundaries
    from ._boundary import instability_kind as instability_kind
    from ._boundary import map_threshold as map_threshold
    from ._boundary import secant_threshold as secant_threshold
    from ._boundary import stability_scan as stability_scan
    from ._demo import run_demo as run_demo
    from ._early_warning import WARNING_SIGNS as WARNING_SIGNS
    from ._early_warning import EarlyWarning as EarlyWarning
    from ._early_warning import delayed_map_boundary as delayed_map_boundary
    from ._early_warning import delayed_map_warning as delayed_map_warning
    from ._early_warning import early_warning as early_warning
    from ._early_warning import linear_warning as linear_warning
    from ._early_warning import warning_scan as warning_scan
    from ._edge_weight import node_weights as node_weights
    from ._edge_weight import with_edge_weights as with_edge_weights
    from ._features import zigzag_update as zigzag_update
    from ._hill import with_log_hill as with_log_hill
    from ._jaxsetup import enable_compilation_cache as enable_compilation_cache
    from ._kinetics import AlonKinetics as AlonKinetics
    from ._kinetics import CompetenceKinetics as CompetenceKinetics
    from ._kinetics import Kinetics as Kinetics
    from ._kinetics import Model as Model
    from ._kinetics import Schedule as Schedule
    from ._network import AbstractNetwork as AbstractNetwork
    from ._network import Network as Network
    from ._network import as_network as as_network
    from ._observed import classify_observed as classify_observed
    from ._observed import classify_observed_many as classify_observed_many
    from ._options import OptionsError as OptionsError
    from ._options import Sharded as Sharded
    from ._options import SolveOptions as SolveOptions
    from ._options import resolve_options as resolve_options
    from ._params import get_param as get_param
    from ._params import make_model as make_model
    from ._params import param_names as param_names
    from ._params import param_setter as param_setter
    from ._params import set_param as set_param
    from ._params import set_params as set_params
    from ._params import with_pipeline as with_pipeline
    from ._phase import PhaseResult as PhaseResult
    from ._phase import phase_diagram as phase_diagram
    from ._phase_plot import plot_phase_grid as plot_phase_grid
    from ._pipeline import Pipeline as Pipeline
    from ._pipeline import parse_pipeline as parse_pipeline
    from ._pool import PoolPaths as PoolPaths
    from ._pool import compute_cost as compute_cost
    from ._pool import pool_paths as pool_paths
    from ._pool_stats import PoolStats as PoolStats
    from ._pool_stats import fit_pool_sigma as fit_pool_sigma
    from ._pool_stats import pool_variance as pool_variance
    from ._population import POPULATION_MODELS as POPULATION_MODELS
    from ._population import fixation_probability as fixation_probability
    from ._population import moran as moran
    from ._population import neutral_variance as neutral_variance
    from ._population import simulate_population as simulate_population
    from ._population import start_frequency as start_frequency
    from ._population import wright_fisher as wright_fisher
    from ._regulation import edge_term as edge_term
    from ._regulation import gate_and as gate_and
    from ._regulation import gate_or as gate_or
    from ._regulation import hill_activation as hill_activation
    from ._regulation import hill_repression as hill_repression
    from ._regulation import network_regulation as network_regulation
    from ._sbml import to_sbml as to_sbml
    from ._sbml import write_sbml as write_sbml
    from ._solve import FAILURE_MESSAGES as FAILURE_MESSAGES
    from ._solve import Solution as Solution
    from ._solve import diffrax_ode as diffrax_ode
    from ._solve import solve as solve
    from ._sweep import Axis as Axis
    from ._sweep import grid as grid

_LAZY: dict[str, str] = {
    "Stability": "_analysis",
    "classify": "_analysis",
    "equilibrate": "_analysis",
    "linear_stability": "_analysis",
    "metrics": "_analysis",
    "solution_stability": "_analysis",
    "steady_state": "_analysis",
    "stack_models": "_batch",
    "Boundary": "_boundary",
    "find_boundaries": "_boundary",
    "instability_kind": "_boundary",
    "map_threshold": "_boundary",
    "secant_threshold": "_boundary",
    "stability_scan": "_boundary",
    "WARNING_SIGNS": "_early_warning",
    "EarlyWarning": "_early_warning",
    "delayed_map_boundary": "_early_warning",
    "delayed_map_warning": "_early_warning",
    "early_warning": "_early_warning",
    "linear_warning": "_early_warning",
    "warning_scan": "_early_warning",
    "with_log_hill": "_hill",
    "AlonKinetics": "_kinetics",
    "CompetenceKinetics": "_kinetics",
    "Kinetics": "_kinetics",
    "Model": "_kinetics",
    "Schedule": "_kinetics",
    "AbstractNetwork": "_network",
    "Network": "_network",
    "as_network": "_network",
    "classify_observed": "_observed",
    "classify_observed_many": "_observed",
    "OptionsError": "_options",
    "Sharded": "_options",
    "SolveOptions": "_options",
    "resolve_options": "_options",
    "node_weights": "_edge_weight",
    "with_edge_weights": "_edge_weight",
    "get_param": "_params",
    "make_model": "_params",
    "param_names": "_params",
    "param_setter": "_params",
    "set_param": "_params",
    "set_params": "_params",
    "with_pipeline": "_params",
    "PhaseResult": "_phase",
    "phase_diagram": "_phase",
    "enable_compilation_cache": "_jaxsetup",
    "plot_phase_grid": "_phase_plot",
    "Pipeline": "_pipeline",
    "parse_pipeline": "_pipeline",
    "PoolPaths": "_pool",
    "PoolStats": "_pool_stats",
    "compute_cost": "_pool",
    "fit_pool_sigma": "_pool_stats",
    "pool_paths": "_pool",
    "pool_variance": "_pool_stats",
    "POPULATION_MODELS": "_population",
    "fixation_probability": "_population",
    "moran": "_population",
    "neutral_variance": "_population",
    "simulate_population": "_population",
    "start_frequency": "_population",
    "wright_fisher": "_population",
    "run_demo": "_demo",
    "zigzag_update": "_features",
    "edge_term": "_regulation",
    "gate_and": "_regulation",
    "gate_or": "_regulation",
    "hill_activation": "_regulation",
    "hill_repression": "_regulation",
    "network_regulation": "_regulation",
    "to_sbml": "_sbml",
    "write_sbml": "_sbml",
    "FAILURE_MESSAGES": "_solve",
    "Solution": "_solve",
    "diffrax_ode": "_solve",
    "solve": "_solve",
    "Axis": "_sweep",
    "grid": "_sweep",
}


__getattr__, __dir__ = lazy_exports(__name__, _LAZY, globals())
