"""``make demo`` for the simulator: step responses of all 16 FFL presets."""

from __future__ import annotations

from pathlib import Path

import jax
import jax.numpy as jnp

from ._analysis import REGIME_NAMES, Regime, classify, equilibrate, metrics
from ._io import write_json
from ._options import SolveOptions
from ._params import make_model
from ._solve import Schedule, Solution, solve
from ._trajectory_plot import plot_preset_grid
from .spec import ffl_spec, preset_names

__all__ = ["run_demo", "solve_presets"]


def solve_presets(
    kinetics: str = "alon",
    params: dict[str, float] | None = None,
    schedule: str = "on@0,off@10",
    t1: float = 20.0,
    n_points: int = 401,
) -> tuple[list[str], Solution]:
    """Solve all 16 presets from their OFF steady states, in one vmapped call.

    Returns:
        (preset labels, batched Solution with leading axis 16).
    """
    labels, models = [], []
    for motif, gate in preset_names():
        labels.append(f"{motif}-{gate}")
        model = make_model(ffl_spec(motif, gate), kinetics, params)
        models.append(equilibrate(model, 0.0))  # start from the input-OFF steady state
    stacked = jax.tree.map(lambda *xs: jnp.stack(xs), *models)
    sched = Schedule.parse(schedule)
    opts = SolveOptions(n_points=n_points)
    sols = jax.vmap(lambda m: solve(m, sched, t1=t1, options=opts))(stacked)
    return labels, sols


def run_demo(out: Path, *, shown_as: Path | None = None) -> dict:
    """Write ``presets.png`` and ``presets.json`` (strict JSON, with the dtype used) to
    ``out`` and print each regime; ``shown_as`` is the folder named in the printout
    (default ``out``)."""
    out.mkdir(parents=True, exist_ok=True)
    params = {"beta": 5.0, "gamma": 1.0}
    labels, sols = solve_presets("alon", params)  # ON at 0, OFF at 10: for the delays
    _, steps = solve_presets("alon", params, schedule="on@0", t1=10.0)  # the ON regime
    regimes, _ = jax.vmap(lambda s: classify(s, bounded=False))(steps)
    mets = jax.vmap(metrics)(sols)
    singles = [jax.tree.map(lambda x, i=i: x[i], sols) for i in range(len(labels))]
    rows = {}
    print(f"{'preset':<8} {'regime (ON step)':<24} {'Z t50_on':>9} {'Z t50_off':>9}")
    for k, label in enumerate(labels):
        name = REGIME_NAMES[Regime(int(regimes[k]))]
        t_on, t_off = float(mets["t50_on"][k, 2]), float(mets["t50_off"][k, 2])
        rows[label] = {
            "regime": name,
            "z_t50_on": t_on,
            "z_t50_off": t_off,
            "z_on_steady": float(sols.states[k, 200, 2]),
        }
        print(f"{label:<8} {name:<24} {t_on:>9.3f} {t_off:>9.3f}")
    plot_preset_grid(singles, [f"{lb}: {rows[lb]['regime']}" for lb in labels], out / "presets.png")
    summary = {
        "kinetics": "alon",
        "params": params,
        "schedule": "on@0,off@10",
        "dtype": str(sols.states.dtype),
        "presets": rows,
    }
    write_json(out / "presets.json", summary, indent=1)
    shown = shown_as or out
    print(f"figure: {shown / 'presets.png'}\nsummary: {shown / 'presets.json'}")
    return rows
