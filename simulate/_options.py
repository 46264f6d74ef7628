"""How an ODE is solved: one options object for every solve entry point.

:class:`SolveOptions` is plain Python (no JAX at import). :func:`~simulate.solve` (one
model or a stacked batch, ``batch=``), :func:`~simulate.phase_diagram` and calibrate's
adaptive likelihood all take one, and all start from the same default,
:data:`DEFAULT_OPTIONS` (``SolveOptions()``). :class:`Sharded` says how
``solve(..., batch=Sharded(...))`` cuts a large batch.
"""

from __future__ import annotations

import dataclasses
import json
import math
import operator
from collections.abc import Mapping
from typing import Any

from ._errors import ConfigError
from .spec import SpecError

__all__ = [
    "ADJOINTS",
    "DEFAULT_OPTIONS",
    "DTYPES",
    "SOLVER_NAMES",
    "OptionsError",
    "Sharded",
    "SolveOptions",
    "resolve_options",
]

#: Solver names (the diffrax solvers behind them are in :data:`simulate._solve.SOLVERS`).
SOLVER_NAMES = ("tsit5", "dopri5", "dopri8", "kvaerno5", "kvaerno3")
#: Floating dtypes a solve can compute in.
DTYPES = ("float64", "float32")
#: How a solve is differentiated: ``recursive`` (diffrax's checkpointed reverse mode, the
#: default), ``forward`` (forward mode only: ``jax.jacfwd``; cheap for few parameters) or
#: ``direct`` (reverse mode through the unrolled loop; also forward-mode capable).
ADJOINTS = ("recursive", "forward", "direct")


class OptionsError(ConfigError, SpecError):
    """An invalid solve option; the message names the field.

    Both a :class:`~simulate.ConfigError` and a :class:`~simulate.SpecError` (what the
    solve functions raised for bad settings before the options object existed).
    """


@dataclasses.dataclass(frozen=True)
class SolveOptions:
    """How an ODE is solved (hashable: one compilation per distinct options).

    The same default serves every entry point. A phase diagram at ``rtol=1e-8`` measured
    as fast as at ``1e-6`` (the shared-step solver's cost is dominated by the classifier
    and the per-step overhead), so the default is the accurate one.

    Attributes:
        n_points: Evenly spaced save points from ``t0`` to ``t1`` (>= 2).
        rtol: Relative tolerance (finite, > 0).
        atol: Absolute tolerance (finite, > 0).
        solver: ``tsit5`` (default), ``dopri5``, ``dopri8``; stiff: ``kvaerno5``,
            ``kvaerno3`` (:func:`~simulate.solve` only; the batched solvers are explicit).
        max_steps: Solver step budget per solve (>= 1).
        dtype: ``"float64"`` (default; turns on JAX's 64-bit mode if it is off) or
            ``"float32"`` (faster; resolves about 1e-7, so use ``rtol >= 1e-6``).
        dt0: Initial step (None: the solver chooses).
        adjoint: ``recursive``, ``forward`` or ``direct`` (see :data:`ADJOINTS`).
    """

    n_points: int = 201
    rtol: float = 1e-8
    atol: float = 1e-10
    solver: str = "tsit5"
    max_steps: int = 100_000
    dtype: str = "float64"
    dt0: float | None = None
    adjoint: str = "recursive"

    def __post_init__(self) -> None:
        for name, least in (("n_points", 2), ("max_steps", 1)):
            v = getattr(self, name)
            try:
                v = operator.index(v)  # int or NumPy integer; not bool, not float
            except TypeError:
                v = None
            if v is None or isinstance(getattr(self, name), bool) or v < least:
                got = getattr(self, name)
                raise OptionsError(f"{name} must be an integer >= {least}, got {got!r}")
            object.__setattr__(self, name, int(v))
        for name in ("rtol", "atol") + (("dt0",) if self.dt0 is not None else ()):
            v = getattr(self, name)
            try:
                ok = not isinstance(v, bool | str) and math.isfinite(float(v)) and float(v) > 0
            except (TypeError, ValueError):
                ok = False
            if not ok:
                raise OptionsError(f"{name} must be a finite number > 0, got {v!r}")
            object.__setattr__(self, name, float(v))
        if self.solver not in SOLVER_NAMES:
            raise OptionsError(
                f"unknown solver {self.solver!r}; choose one of {sorted(SOLVER_NAMES)}"
            )
        if self.dtype not in DTYPES:
            raise OptionsError(f"dtype must be 'float64' or 'float32', got {self.dtype!r}")
        if self.adjoint not in ADJOINTS:
            raise OptionsError(f"adjoint must be one of {list(ADJOINTS)}, got {self.adjoint!r}")

    def replace(self, **changes: Any) -> SolveOptions:
        """A copy with ``changes`` (validated); unknown fields raise :class:`OptionsError`."""
        _check_names(changes)
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict (every field)."""
        return dataclasses.asdict(self)

    def to_json(self) -> str:
        """Strict JSON text of :meth:`to_dict`."""
        return json.dumps(self.to_dict(), allow_nan=False, sort_keys=True)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> SolveOptions:
        """Inverse of :meth:`to_dict`; missing fields take the defaults, unknown fields raise
        :class:`OptionsError`."""
        if not isinstance(data, Mapping):
            raise OptionsError(f"solve options must be a mapping, got {type(data).__name__}")
        _check_names(data)
        return cls(**dict(data))


def _check_names(data: Mapping[str, Any]) -> None:
    known = {f.name for f in dataclasses.fields(SolveOptions)}
    extra = sorted(set(data) - known)
    if extra:
        raise OptionsError(f"unknown solve option(s) {extra}; known: {sorted(known)}")


#: The one default of every solve entry point.
DEFAULT_OPTIONS = SolveOptions()


def resolve(options: SolveOptions | None) -> SolveOptions:
    """``options``, or :data:`DEFAULT_OPTIONS` for None: every solve entry point's one way
    to set how a solve is done.

    Raises:
        OptionsError: If ``options`` is not a :class:`SolveOptions`.
    """
    if options is None:
        options = DEFAULT_OPTIONS
    elif not isinstance(options, SolveOptions):
        raise OptionsError(f"options must be a SolveOptions, got {type(options).__name__}")
    return options


#: The public name of :func:`resolve` (``simulate.resolve_options``).
resolve_options = resolve


@dataclasses.dataclass(frozen=True)
class Sharded:
    """How :func:`~simulate.solve` cuts a large stacked ODE batch (``batch=Sharded(...)``).

    The batch is cut into compiled calls of at most ``call_size`` cells (bounds memory); in
    each call the cells are split over all JAX devices and every device runs ``lax.map``
    over sub-chunks of ``chunk_size`` cells, each solved as one shared-step system.
    ``batch="sharded"`` is ``Sharded()``.

    Attributes:
        chunk_size: Cells per shared-step solve (>= 1; about 512-1024 is fastest on CPU).
        call_size: Cells per compiled call (>= 1; the trajectories of all cells come back as
            one array either way; a single call avoids copying them).
        keep_states: Return the trajectories; False: only ``code`` ``(B,)`` is filled and
            ``t``, ``states``, ``inputs``, ``y_final`` have a length-0 axis (throughput runs).
    """

    chunk_size: int = 1024
    call_size: int = 16384
    keep_states: bool = True

    def __post_init__(self) -> None:
        for name in ("chunk_size", "call_size"):
            got = getattr(self, name)
            try:
                v = operator.index(got)
            except TypeError:
                v = None
            if v is None or isinstance(got, bool) or v < 1:
                raise OptionsError(f"{name} must be an integer >= 1, got {got!r}")
            object.__setattr__(self, name, int(v))
        if not isinstance(self.keep_states, bool):
            raise OptionsError(f"keep_states must be True or False, got {self.keep_states!r}")
