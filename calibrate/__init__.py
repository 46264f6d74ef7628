"""calibrate — Bayesian fitting of network coupling parameters to competence logs."""

from ._config import ConfigError as ConfigError
from ._config import FitConfig as FitConfig
from ._config import Hierarchy as Hierarchy
from ._config import Link as Link
from ._config import Priors as Priors
from ._data import CurveData as CurveData
from ._data import DataError as DataError
from ._data import DataWarning as DataWarning
from ._data import load_inputs as load_inputs
from ._data import read_run_folder as read_run_folder
from ._data import read_table as read_table
from ._data import read_tensorboard as read_tensorboard
from ._data import validate_table as validate_table
from ._fit import fit as fit
from ._fit import fit_model as fit_model
from ._fit import laplace as laplace
from ._fit import map_fit as map_fit
from ._model import CurveModel as CurveModel
from ._model import Layout as Layout
from ._model import build_model as build_model
from ._model import solve_at as solve_at
from ._posterior import Posterior as Posterior
from ._select import Selection as Selection
from ._select import candidates as candidates
from ._select import select as select
from ._synth import synthetic_curves as synthetic_curves
