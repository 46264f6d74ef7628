"""Phase diagrams: regime maps over one or two parameters, for one motif or all 16 presets.

>>> import simulate as sim
>>> res = sim.phase_diagram("all", "both", sim.grid("beta", 0.5, 10, 64, "log"),
...                         sim.grid("gamma", 0.1, 10, 64, "log"))      # doctest: +SKIP
>>> res.save("phase_out")   # table.parquet/.csv, arrays.npz, summary.json, phase.png
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ._analysis import REGIME_NAMES, Regime
from ._batch import stack_models
from ._boundary import Boundary, find_boundaries
from ._errors import ConfigError
from ._io import atomic_dir, write_json
from ._jaxsetup import use_float64
from ._kinetics import Model, Schedule
from ._options import SolveOptions, resolve
from ._outputs import claim_folder, mark_output
from ._params import make_model
from ._sweep import METRIC_KEYS, NUM_REGIMES, Axis, SweepOptions, run_cells
from .spec import GATES, MOTIFS, NetworkSpec, SpecError, ffl_spec, resolve_spec

__all__ = ["PhaseResult", "check_out_folder", "phase_diagram", "resolve_panels"]

REGIME_SLUGS = [REGIME_NAMES[r].replace("/", "_").replace(" ", "_") for r in Regime]


def resolve_panels(
    motifs: str | NetworkSpec | Sequence[str | NetworkSpec], gates: str | Sequence[str]
) -> list[tuple[str, str, NetworkSpec]]:
    """Expand ``motifs`` (``"all"``, presets, specs, spec paths) × ``gates`` (``"both"``).

    Returns:
        ``(motif, gate, spec)`` per panel; custom specs get gate ``""``.
    """
    if isinstance(motifs, str | NetworkSpec):
        motifs = [motifs]
    if isinstance(gates, str):
        gates = list(GATES) if gates.lower() in ("both", "all") else [gates]
    gates = [str(g).upper() for g in gates]
    for g in gates:
        if g not in GATES:
            raise SpecError(f"unknown gate {g!r}; choose AND, OR or both")
    out: list[tuple[str, str, NetworkSpec]] = []
    for m in motifs:
        if isinstance(m, NetworkSpec):
            out.append((m.name, "", m))
        elif m.lower() == "all":
            out += [(mm, g, ffl_spec(mm, g)) for mm in MOTIFS for g in gates]
        elif m.upper() in MOTIFS:
            out += [(m.upper(), g, ffl_spec(m, g)) for g in gates]
        else:  # "I1-OR" (a preset with its gate) or a spec file
            preset = m.partition("-")[0].upper() in MOTIFS
            spec = resolve_spec(m) if preset else resolve_spec(m, what="motif")
            out.append((spec.name, "", spec))
    if not out:
        raise SpecError("no panels: give at least one motif")
    return out


@dataclasses.dataclass
class PhaseResult:
    """A computed phase diagram.

    Attributes:
        panels: ``(motif, gate)`` per panel, length ``P``.
        axes: Swept axes, ``[x]`` or ``[x, y]``.
        nodes: Node names.
        arrays: Per-cell arrays of shape ``(P, ny, nx, ...)`` (``ny = 1`` for 1-D):
            ``regime`` (most probable, ints of :class:`~simulate.Regime`), ``prob``
            ``(..., 6)`` regime probabilities over replicates, metrics ``(..., N)``
            (means over successful replicates) and, if computed, ``max_real``,
            ``spectral_radius``, ``leading_imag``.
        boundaries: Per panel, stability boundaries along ``x`` (1-D sweeps).
        info: Settings and timings (JSON-ready).
    """

    panels: list[tuple[str, str]]
    axes: list[Axis]
    nodes: tuple[str, ...]
    arrays: dict[str, np.ndarray]
    boundaries: list[list[Boundary]]
    info: dict[str, Any]

    @property
    def labels(self) -> list[str]:
        """Panel titles, e.g. ``C1-AND``."""
        return [f"{m}-{g}" if g else m for m, g in self.panels]

    def to_frame(self):
        """Tidy table: one row per (panel, cell) with parameters, regime, probabilities,
        metrics per node and stability indicators."""
        import pandas as pd

        a = self.arrays
        P, ny, nx = a["regime"].shape
        pi, yi, xi = np.meshgrid(np.arange(P), np.arange(ny), np.arange(nx), indexing="ij")
        pi, yi, xi = pi.ravel(), yi.ravel(), xi.ravel()
        cols: dict[str, Any] = {
            "motif": [self.panels[p][0] for p in pi],
            "gate": [self.panels[p][1] for p in pi],
            self.axes[0].name: self.axes[0].values[xi],
        }
        if len(self.axes) > 1:
            cols[self.axes[1].name] = self.axes[1].values[yi]
        reg = a["regime"].ravel()
        cols["regime"] = [REGIME_NAMES[Regime(int(r))] for r in reg]
        cols["regime_code"] = reg
        for k, slug in enumerate(REGIME_SLUGS):
            cols[f"p_{slug}"] = a["prob"][..., k].ravel()
        for key in METRIC_KEYS:
            for j, node in enumerate(self.nodes):
                cols[f"{key}[{node}]"] = a[key][..., j].ravel()
        for key in ("max_real", "spectral_radius", "leading_imag"):
            if key in a:
                cols[key] = a[key].ravel()
        return pd.DataFrame(cols)

    def summary(self) -> dict[str, Any]:
        """JSON-ready summary: settings, regime counts per panel, boundaries, timings."""
        counts = {}
        for p, label in enumerate(self.labels):
            reg = self.arrays["regime"][p]
            counts[label] = {REGIME_NAMES[r]: int(np.sum(reg == int(r))) for r in Regime}
        return {
            **self.info,
            "axes": [
                {
                    "name": ax.name,
                    "scale": ax.scale,
                    "min": float(ax.values[0]),
                    "max": float(ax.values[-1]),
                    "num": len(ax.values),
                }
                for ax in self.axes
            ],
            "panels": self.labels,
            "regime_counts": counts,
            "boundaries": {
                lb: [b.to_dict() for b in bs]
                for lb, bs in zip(self.labels, self.boundaries, strict=True)
            },
        }

    def save(self, out: str | Path, *, figure: bool = True, overwrite: bool = False) -> Path:
        """Write ``table.parquet``, ``table.csv``, ``arrays.npz``, ``summary.json`` (strict
        JSON) and ``phase.png`` into the folder ``out``, atomically (built under a temporary
        name, then renamed into place).

        Raises:
            OutputError: If ``out`` cannot be written, or exists with files in it and
                ``overwrite`` is False, or holds files a phase diagram did not write.
        """
        out = check_out_folder(out, overwrite=overwrite, what="output folder")
        df = self.to_frame()
        axes = {f"axis_{k}_{ax.name}": ax.values for k, ax in enumerate(self.axes)}
        payload: dict[str, Any] = {**self.arrays, **axes, "panels": np.asarray(self.labels)}
        with atomic_dir(out, what="output folder") as tmp:
            df.to_parquet(tmp / "table.parquet", index=False)
            df.to_csv(tmp / "table.csv", index=False)
            np.savez_compressed(tmp / "arrays.npz", **payload)  # pyright: ignore[reportArgumentType]
            write_json(tmp / "summary.json", self.summary(), indent=1)
            if figure:
                from ._phase_plot import plot_phase_grid

                plot_phase_grid(self, tmp / "phase.png")
            mark_output(tmp, "simulate phase", [p.name for p in tmp.iterdir()], made=True)
        return out


def check_out_folder(
    out: str | Path,
    *,
    overwrite: bool = False,
    what: str = "--out",
    command: str = "simulate phase",
) -> Path:
    """Fail before any work unless ``out`` is new or empty, or (with ``overwrite``) a folder
    the same ``command`` made (:func:`simulate.claim_folder`: never a folder of other files)."""
    return claim_folder(out, command=command, overwrite=overwrite, what=what)


def _auto_method(method: str | None, axes: Sequence[Axis], sigma: float) -> str:
    if method is not None:
        if method not in ("ode", "sde", "map"):
            raise SpecError(f"unknown method {method!r}; choose ode, sde or map")
        return method
    bases = {ax.name.split("[", 1)[0].strip() for ax in axes}
    if sigma > 0 or "sigma" in bases:
        return "sde"
    return "map" if "eta" in bases else "ode"


def _aggregate(cells: dict[str, np.ndarray], shape: tuple[int, ...], R: int, n_nodes: int):
    reg = cells["regime"].reshape(*shape, R)
    prob = np.stack([(reg == k).mean(axis=-1) for k in range(NUM_REGIMES)], axis=-1)
    arrays: dict[str, np.ndarray] = {"regime": np.argmax(prob, axis=-1), "prob": prob}
    ok = (cells["code"].reshape(*shape, R) == 0)[..., None]
    for key in METRIC_KEYS:
        v = cells[key].reshape(*shape, R, n_nodes).astype(float)
        v = np.where(ok & np.isfinite(v), v, np.nan)
        with np.errstate(invalid="ignore"):
            cnt = np.sum(np.isfinite(v), axis=-2)
            arrays[key] = np.where(cnt > 0, np.nansum(v, axis=-2) / np.maximum(cnt, 1), np.nan)
    for key in ("max_real", "spectral_radius", "leading_imag"):
        if key in cells:
            arrays[key] = cells[key].reshape(*shape, R)[..., 0].astype(float)
    arrays["failed_fraction"] = prob[..., int(Regime.FAILED)]
    return arrays


def _check_settings(**kw: Any) -> None:
    """Reject settings giving a meaningless map (ConfigError); SolveOptions checks the rest."""
    t1 = kw["t1"]
    if not (isinstance(t1, int | float) and math.isfinite(t1) and t1 > 0):
        raise ConfigError(f"t1 must be a finite end time > 0 (the sweep starts at 0), got {t1}")
    for name, least in (("steps", 1), ("replicates", 1), ("chunk_size", 1)):
        if int(kw[name]) < least:
            raise ConfigError(f"{name} must be >= {least}, got {kw[name]}")
    if kw["solver"] != "tsit5":
        raise ConfigError(f"phase_diagram solves with solver 'tsit5', got {kw['solver']!r}")


def phase_diagram(
    motifs: str | NetworkSpec | Sequence[str | NetworkSpec],
    gates: str | Sequence[str],
    x: Axis,
    y: Axis | None = None,
    *,
    kinetics: str = "alon",
    params: Mapping[str, float] | None = None,
    feedback: int | None = None,
    feedback_K: float = 0.5,
    delay_stages: int = 0,
    tau: float = 1.0,
    eta: float = 0.1,
    sigma: float = 0.0,
    method: str | None = None,
    schedule: Schedule | str = "on@0",
    t1: float = 20.0,
    steps: int = 400,
    replicates: int = 1,
    seed: int = 0,
    options: SolveOptions | None = None,
    chunk_size: int = 1024,
    stability: bool = True,
    boundaries: bool = True,
    progress: bool = True,
) -> PhaseResult:
    """Regime map of every panel over ``x`` (and ``y``).

    Args:
        motifs: ``"all"``, a preset (``"C1"``), a spec, a spec path, or a list of these.
        gates: ``"AND"``, ``"OR"`` or ``"both"`` (presets only).
        x: Horizontal axis (see :func:`~simulate.grid`).
        y: Vertical axis, or None for a 1-D sweep.
        kinetics: ``"alon"`` or ``"competence"``.
        params: Fixed parameter overrides by name.
        feedback: Add end-to-end reward edges from the last node with this sign (±1).
        feedback_K: Threshold of the feedback edges (sweep it as ``K[Z->X]``).
        delay_stages: Erlang stages of the policy lag (sweep ``tau`` with > 0).
        tau: Mean policy lag (time units).
        eta: Learning-step size (time per step; ``map``).
        sigma: Gradient-noise amplitude (``sde``; needs competence kinetics).
        method: ``ode``/``sde``/``map``; default: ``sde`` if noisy, ``map`` if ``eta`` is
            swept, else ``ode``.
        schedule: Input schedule shared by all cells.
        t1: End time (time units); ``options.n_points`` saved points feed the classifier.
        steps: Map steps (``map``).
        replicates: Noise replicates per cell (``sde``); regimes become probabilities.
        seed: PRNG seed.
        options: How every cell is solved: save points (``ode``/``sde``), tolerances, step
            budget and dtype (``"float64"`` turns on JAX's 64-bit mode if it is off;
            ``"float32"`` is about 2-3x faster, use rtol >= 1e-6); default
            :class:`~simulate.SolveOptions` ``()``, the default of every solve entry point.
            The solver must be ``tsit5``. ``info["dtype"]`` records what was used and
            ``info["options"]`` the options.
        chunk_size: Cells per shared-step solve; bounds memory.
        stability: Linearise each cell at its steady state (for boundary lines).
        boundaries: For 1-D sweeps, locate stability boundaries by bisection.
        progress: tqdm bar over chunks.

    Returns:
        A :class:`PhaseResult`; call :meth:`PhaseResult.save` to write the output folder.
    """
    t_start = time.perf_counter()
    opts_solve = resolve(options)
    _check_settings(
        t1=t1,
        steps=steps,
        replicates=replicates,
        chunk_size=chunk_size,
        solver=opts_solve.solver,
    )
    dtype = opts_solve.dtype
    if dtype == "float64":
        use_float64(True)  # JAX computes in float32 unless 64-bit mode is on
    axes = [x] if y is None else [x, y]
    method = _auto_method(method, axes, sigma)
    R = int(replicates) if method == "sde" else 1
    if R < 1:
        raise SpecError(f"replicates must be >= 1, got {replicates}")
    if any(ax.name == "tau" for ax in axes) and delay_stages < 1:
        raise SpecError("sweeping tau needs delay_stages >= 1 (the Erlang lag)")
    sched = Schedule.parse(schedule) if isinstance(schedule, str) else schedule
    panels = resolve_panels(motifs, gates)
    models: list[Model] = []
    for _, _, spec in panels:
        spec = resolve_spec(spec, feedback=feedback, feedback_K=feedback_K)
        models.append(
            make_model(
                spec, kinetics, params, delay_stages=delay_stages, tau=tau, eta=eta, sigma=sigma
            )
        )
    wirings = {m.network.wiring for m in models}
    if len(wirings) > 1:
        raise SpecError("all panels of one phase diagram must share one wiring")
    base = stack_models(models)
    P, nx = len(panels), len(x.values)
    ny = 1 if y is None else len(y.values)
    pi, yi, xi, _ = np.meshgrid(
        np.arange(P), np.arange(ny), np.arange(nx), np.arange(R), indexing="ij"
    )
    vals = [x.values[xi.ravel()]] + ([] if y is None else [y.values[yi.ravel()]])
    opts = SweepOptions(
        method=method,
        t1=t1,
        n_points=opts_solve.n_points,
        steps=steps,
        rtol=opts_solve.rtol,
        atol=opts_solve.atol,
        dtype=dtype,
        stability=stability,
        max_steps=opts_solve.max_steps,
    )
    t_cells = time.perf_counter()
    cells = run_cells(
        base,
        [ax.name for ax in axes],
        pi.ravel(),
        np.stack(vals, axis=1),
        sched,
        opts,
        seed=seed,
        chunk_size=chunk_size,
        progress=progress,
    )
    t_cells = time.perf_counter() - t_cells
    arrays = _aggregate(cells, (P, ny, nx), R, models[0].size)
    bnds: list[list[Boundary]] = [[] for _ in panels]
    t_bnd = 0.0
    if boundaries and y is None and len(x.values) >= 2 and method in ("ode", "map", "sde"):
        t0 = time.perf_counter()
        bmethod = "map" if method == "map" else "ode"
        bnds = [
            find_boundaries(m, x.name, x.values, method=bmethod, schedule=sched, t1=max(t1, 50.0))
            for m in models
        ]
        t_bnd = time.perf_counter() - t0
    info = {
        "kinetics": kinetics,
        "method": method,
        "replicates": R,
        "params": dict(params or {}),
        "feedback": feedback,
        "feedback_K": feedback_K if feedback is not None else None,
        "delay_stages": delay_stages,
        "tau": tau,
        "eta": eta,
        "sigma": sigma,
        "t1": t1,
        "n_points": opts_solve.n_points,
        "steps": steps,
        "rtol": opts_solve.rtol,
        "atol": opts_solve.atol,
        "options": opts_solve.to_dict(),
        "dtype": str(np.asarray(cells["steady"]).dtype),  # what the solver actually used
        "n_cells": int(P * ny * nx * R),
        "failed_cells": int(np.sum(cells["code"] != 0)),
        "fallback_cells": int(np.sum(~cells["shared_ok"])),
        "wall_s": {"cells": t_cells, "boundaries": t_bnd, "total": time.perf_counter() - t_start},
    }
    return PhaseResult(
        [(m, g) for m, g, _ in panels], axes, models[0].network.names, arrays, bnds, info
    )
