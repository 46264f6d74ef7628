"""Figure 2: what makes joint training oscillate — policy lag and finite learning steps.

Left: a critic-style negative end-to-end reward (C1 + Z ⊣ X, Y) seen through an Erlang
policy lag; trajectories of the output agent for three lags. Middle: the leading Jacobian
eigenvalue against the lag (Hopf where Re λ crosses 0). Right: one agent learning with
finite steps: spectral radius |1 − η(ρ + δ)| of the map; at η|λ| = 2 the fixed point loses
stability by a flip (an eigenvalue of I + ηJ crosses −1) and, this map being linear, the
iterates then diverge (no period-2 orbit).

Next to the PNG, ``oscillation.json`` holds the numbers the paper quotes (the lag of the
Hopf onset, the largest growth rate and its lag, the regimes of the three trajectories and
the step size of the flip).

    python -m paper.figures.fig_oscillation --out paper/figures/oscillation.png [--toy]
"""

from __future__ import annotations

import argparse
from pathlib import Path

import jax

jax.config.update("jax_enable_x64", True)

import matplotlib  # noqa: E402

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

import simulate as sim  # noqa: E402

PARAMS = {"rho": 1.0, "b": 0.0, "delta": 0.1, "K": 0.3, "n": 4.0}


def critic_model(tau: float):
    """C1 with negative end-to-end feedback from Z, regulation seen through a lag ``tau``."""
    spec = sim.add_feedback(sim.ffl_spec("C1"), "Z", sign=-1, K=0.3, n=4.0)
    return sim.make_model(spec, "competence", PARAMS, delay_stages=4, tau=tau)


def first_crossing(x: np.ndarray, y: np.ndarray, level: float, log: bool = False) -> float | None:
    """The first ``x`` where ``y`` crosses ``level`` upwards (linear interpolation, in
    ``log10 x`` when ``log``); None when it never does."""
    u = np.log10(x) if log else np.asarray(x, dtype=float)
    for i in range(len(y) - 1):
        if y[i] < level <= y[i + 1]:
            w = (level - y[i]) / (y[i + 1] - y[i])
            v = u[i] + w * (u[i + 1] - u[i])
            return float(10**v if log else v)
    return None


def main() -> None:
    """Compute and draw the three panels; write their numbers to oscillation.json."""
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--out", default="paper/figures/oscillation.png")
    ap.add_argument("--toy", action="store_true", help="coarse sweeps (for tests)")
    args = ap.parse_args()
    fig, axes = plt.subplots(1, 3, figsize=(13, 3.6), dpi=120)
    numbers: dict = {"toy": args.toy, "lags": {}}

    for tau in (0.5, 3.0, 10.0):
        sol = sim.solve(critic_model(tau), t1=300, options=sim.SolveOptions(n_points=1501))
        regime, _ = sim.classify(sol)
        name = sim.REGIME_NAMES[sim.Regime(int(regime))]
        numbers["lags"][f"{tau:g}"] = name
        label = f"τ = {tau:g}: {name}"
        axes[0].plot(sol.t, sol.node("Z"), label=label)
    axes[0].set(
        xlabel="training step",
        ylabel="A_Z (critic-fed output agent)",
        title="policy lag turns reward feedback into oscillation",
    )
    axes[0].legend(fontsize=7)

    taus = np.geomspace(0.2, 30, 10 if args.toy else 40)
    # a lag does not move the equilibrium: continue it from the stable small-lag model
    stable = critic_model(float(taus[0]))
    guess = sim.solve(stable, t1=400, options=sim.SolveOptions(n_points=2)).y_final
    lead = []
    for tau in taus:
        st = sim.linear_stability(critic_model(float(tau)), guess, 1.0)
        if not bool(st.found):
            raise RuntimeError(f"no steady state at tau={tau}")
        guess = st.steady
        lead.append(float(st.max_real))
    lead_arr = np.asarray(lead)
    numbers["hopf_tau"] = first_crossing(taus, lead_arr, 0.0, log=True)
    numbers["max_real_peak"] = float(lead_arr.max())
    numbers["max_real_peak_tau"] = float(taus[int(lead_arr.argmax())])
    axes[1].semilogx(taus, lead, "o-", ms=3)
    axes[1].axhline(0, color="k", lw=0.8)
    axes[1].set(
        xlabel="mean policy lag τ (steps)",
        ylabel="max Re λ (1/step)",
        title="linear stability: Hopf onset",
    )

    spec = sim.NetworkSpec(nodes=("A",), edges=(), inputs=("A",))
    etas = np.linspace(0.1, 2.5, 13 if args.toy else 49)
    radius = []
    for eta in etas:
        m = sim.make_model(spec, "competence", {"rho": 0.75, "b": 0.0, "delta": 0.25}, eta=eta)
        sol = sim.solve(m, steps=50, method="map")
        radius.append(float(sim.linear_stability(m, sol.y_final, 1.0).spectral_radius))
    numbers["flip_eta"] = first_crossing(etas, np.asarray(radius), 1.0)
    numbers["flip_eta_theory"] = 2.0  # eta |lambda| = 2 with |lambda| = rho + delta = 1
    axes[2].plot(etas, radius)
    axes[2].axhline(1, color="k", lw=0.8)
    axes[2].axvline(2, color="tab:red", lw=0.8, ls="--", label="η|λ| = 2")
    axes[2].set(
        xlabel="learning-step size η (|λ| = ρ + δ = 1)",
        ylabel="spectral radius of I + ηJ",
        title="finite steps: flip at η|λ| = 2, then divergence",
    )
    axes[2].legend(fontsize=7)
    fig.tight_layout()
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out)
    sim.write_json(out.parent / "oscillation.json", numbers, indent=1)
    print(f"figure: {out}")


if __name__ == "__main__":
    main()
