"""The posterior object: natural-scale draws, ArviZ InferenceData, summary, diagnostics; its
folder on disk (:meth:`Posterior.save`, :func:`load_fit`)."""

from __future__ import annotations

import dataclasses
import json
import warnings
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

import simulate
from simulate import atomic_dir, claim_folder, mark_output, write_json

from ._build import build_model
from ._config import ConfigError, FitConfig
from ._covariates import with_products
from ._curve_data import CurveData
from ._density import batched_curves, batched_loglik, batched_run_params
from ._fit_files import read_configs, read_latent, read_table
from ._link_rows import LINKS_FILE, read_link_rows, write_link_rows
from ._model import CurveModel
from ._regulators import NO_NEW_RUN

__all__ = ["Posterior", "check_output_folder", "load_fit"]

_FILES = ("config.json", "network.json", "data.parquet", "latent.npz")  # what load_fit reads


def check_output_folder(out: str | Path, *, what: str = "--out") -> Path:
    """Fail now unless ``out`` can be written and replaced as a whole: a new or empty
    folder, or one that calibrate fit wrote (a fit or a selection; the toolkit's one rule,
    :func:`simulate.claim_folder`); any other folder would lose its files.

    Raises:
        OutputError: ``out`` is not writable, its name is too long, or it holds files
            calibrate did not write (a training run, a user's files).
    """
    return claim_folder(out, command=FIT_COMMAND, overwrite=True, what=what)


FIT_COMMAND = "calibrate fit"

SOLVER_ERROR_MAX = 1e-3  # largest tolerated |curves - reference solve| at the MAP
_DIMS = {"b": "regulated", "Kp": "pipeline", "m": "pipeline"}  # a global's dim: its own name


def _az():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        import arviz as az
    return az


class Posterior:
    """Draws of one fit, with their names and diagnostics.

    Attributes:
        model: The :class:`~calibrate.CurveModel` that was fitted.
        samples: Latent draws by site, each ``(chains, draws, ...)``.
        stats: Sampler statistics (``diverging``, ``num_steps``), ``(chains, draws)``.
        map_params: The MAP latent values (warm start).
        timing: Seconds spent: ``map_s``, ``inference_s``, ``total_s``.
        map_log_joint: Log joint density at the MAP.
        data_table: The fitted long table with each run's hyperparameters (or None).
        hyper: Hyperparameter columns (all but ``seed``) per run, in the model's run order
            (None without ``data``).
    """

    def __init__(
        self,
        model: CurveModel,
        samples: dict[str, np.ndarray],
        stats: dict[str, np.ndarray],
        map_params: dict[str, np.ndarray],
        *,
        timing: dict[str, float] | None = None,
        map_log_joint: float = float("nan"),
        data: CurveData | None = None,
    ):
        self.model = model
        self.samples = samples
        self.stats = stats
        self.map_params = map_params
        self.timing = timing or {}
        self.map_log_joint = map_log_joint
        self._idata = None
        self.data_table = None
        self.hyper: dict[str, np.ndarray] | None = None
        self.run_configs: dict[str, dict[str, Any]] = (
            {} if data is None else {r: dict(c) for r, c in data.configs.items()}
        )
        if data is not None:
            self.data_table = data.table.merge(
                data.hyper, left_on="run", right_index=True, how="left"
            )
            cols = [c for c in data.hyper.columns if c != "seed"]
            hyper = {c: data.hyper.loc[list(model.runs), c].to_numpy(float) for c in cols}
            covs = [lk.covariate for lk in model.config.hierarchy.links]
            self.hyper = with_products(hyper, covs)  # rl.lr*rl.lr_scale.X as a column
        self._loglik: np.ndarray | None = None

    # -- draws --------------------------------------------------------------------------
    @property
    def shape(self) -> tuple[int, int]:
        """(chains, draws)."""
        z = self.samples["z"]
        return int(z.shape[0]), int(z.shape[1])

    def _flat(self) -> dict[str, np.ndarray]:
        c, d = self.shape
        return {k: v.reshape(c * d, *v.shape[2:]) for k, v in self.samples.items()}

    def params(self) -> dict[str, np.ndarray]:
        """Natural-scale global parameters by name (``rho[X]``...), each ``(chains, draws)``.

        With links, these are the values at the reference (geometric-mean) hyperparameters;
        random effects are excluded (population median).
        """
        lay = self.model.layout
        u = lay.loc + lay.scale * self.samples["z"]
        theta = np.asarray(lay.to_natural(jnp.asarray(u)))
        out = {name: theta[..., i] for i, name in enumerate(lay.names)}
        if "c" in self.samples:
            sd = self.model.config.priors.slope_sd
            for i, name in enumerate(self.model.link_names):
                out[name] = sd * self.samples["c"][..., i]
        if "tau_z" in self.samples:
            pr = self.model.config.priors
            tau = np.exp(np.log(pr.re_median) + pr.re_sd * self.samples["tau_z"])
            for i, b in enumerate(self.model.re_bases):
                out[f"tau[{b}]"] = tau[..., i]
        if "z_phi" in self.samples:
            out["phi"] = np.asarray(self.model.phi(jnp.asarray(self.samples["z_phi"])))
        return out

    def run_params(
        self, max_draws: int | None = None, *, key: jax.Array | None = None
    ) -> np.ndarray:
        """Per-run natural parameters, ``(draws, runs, D)`` (a random subset if asked)."""
        flat = self._flat()
        n = next(iter(flat.values())).shape[0]
        idx = np.arange(n)
        if max_draws is not None and n > max_draws:
            rng = np.random.default_rng(
                0 if key is None else int(jax.random.randint(key, (), 0, 2**31 - 1))
            )
            idx = np.sort(rng.choice(n, max_draws, replace=False))
        cm = self.model
        sub = {k: jnp.asarray(v[idx]) for k, v in flat.items()}
        return np.asarray(batched_run_params(cm, sub))

    def log_likelihood(self) -> np.ndarray:
        """Pointwise log-likelihood ``(chains, draws, n_obs)``."""
        if self._loglik is None:
            c, d = self.shape
            flat = {k: jnp.asarray(v) for k, v in self._flat().items()}
            self._loglik = np.asarray(batched_loglik(self.model, flat)).reshape(c, d, -1)
        return self._loglik

    # -- ArviZ --------------------------------------------------------------------------
    def to_inference_data(self) -> Any:
        """ArviZ InferenceData: posterior by base (dims node/edge), log_likelihood, data."""
        if self._idata is not None:
            return self._idata
        az = _az()
        cm = self.model
        lay = cm.layout
        p = self.params()
        post: dict[str, np.ndarray] = {}
        coords: dict[str, list[str]] = {}
        dims: dict[str, list[str]] = {}
        for base in dict.fromkeys(lay.bases):
            names = [n for n, b in zip(lay.names, lay.bases, strict=True) if b == base]
            tg = [t for t, b in zip(lay.targets, lay.bases, strict=True) if b == base]
            dim = "edge" if base in ("K", "n") else _DIMS.get(base, "node" if any(tg) else base)
            coords.setdefault(dim, tg)
            post[base] = np.stack([p[n] for n in names], axis=-1)
            dims[base] = [dim]
        if cm.link_names:
            coords["link"] = [n[2:-1] for n in cm.link_names]
            post["c"] = np.stack([p[n] for n in cm.link_names], axis=-1)
            dims["c"] = ["link"]
        if cm.re_bases:
            coords["re"] = list(cm.re_bases)
            post["tau"] = np.stack([p[f"tau[{b}]"] for b in cm.re_bases], axis=-1)
            dims["tau"] = ["re"]
        if "phi" in p:
            post["phi"] = p["phi"]
        coords["obs_id"] = [str(i) for i in range(cm.k.size)]
        dims["obs"] = ["obs_id"]
        stats = {k: v for k, v in self.stats.items() if np.shape(v)[:2] == self.shape}
        self._idata = az.from_dict(
            posterior=post,
            log_likelihood={"obs": self.log_likelihood()},
            observed_data={"obs": cm.k},
            sample_stats=stats,
            coords=coords,
            dims=dims,
            attrs={
                "network": json.dumps(cm.network.to_spec(cm.name).to_dict()),
                "runs": json.dumps(list(cm.runs)),
                "steps": json.dumps(cm.ts.tolist()),
            },
        )
        return self._idata

    # -- summaries ----------------------------------------------------------------------
    def summary(self) -> dict[str, dict[str, float]]:
        """Name → {mean, sd, q05, q95, r_hat, ess_bulk, ess_tail} (``rho[X]``, ``K[X->Y]``...)."""
        az = _az()
        out = {}
        for name, x in self.params().items():
            x = np.asarray(x, float)
            single = x.shape[0] < 2 or x.shape[1] < 4
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                rhat = float("nan") if single else float(az.rhat(x))
                eb = float("nan") if x.shape[1] < 4 else float(az.ess(x, method="bulk"))
                et = float("nan") if x.shape[1] < 4 else float(az.ess(x, method="tail"))
            out[name] = {
                "mean": float(x.mean()),
                "sd": float(x.std()),
                "q05": float(np.quantile(x, 0.05)),
                "q95": float(np.quantile(x, 0.95)),
                "r_hat": rhat,
                "ess_bulk": eb,
                "ess_tail": et,
            }
        return out

    def diagnostics(self, summary: dict[str, dict[str, float]] | None = None) -> dict[str, Any]:
        """R-hat, ESS and divergences against the config thresholds, with warnings."""
        cfg = self.model.config
        s = summary or self.summary()
        rh = [v["r_hat"] for v in s.values() if np.isfinite(v["r_hat"])]
        eb = [v["ess_bulk"] for v in s.values() if np.isfinite(v["ess_bulk"])]
        et = [v["ess_tail"] for v in s.values() if np.isfinite(v["ess_tail"])]
        div = int(np.sum(self.stats.get("diverging", 0)))
        msgs = []
        if cfg.method != "nuts":
            msgs.append(f"method={cfg.method}: an approximation; R-hat/ESS do not apply")
        else:
            if rh and max(rh) > cfg.rhat_max:
                bad = [k for k, v in s.items() if v["r_hat"] > cfg.rhat_max]
                msgs.append(f"R-hat {max(rh):.3f} > {cfg.rhat_max} for {bad}")
            low = min(min(eb, default=np.inf), min(et, default=np.inf))
            if low < cfg.ess_min:
                bad = [k for k, v in s.items() if min(v["ess_bulk"], v["ess_tail"]) < cfg.ess_min]
                msgs.append(f"ESS {low:.0f} < {cfg.ess_min:.0f} for {bad}")
            if div:
                msgs.append(f"{div} divergent transition(s)")
        if "is_pareto_k" in self.stats:
            k = float(self.stats["is_pareto_k"])
            if k > 0.7:
                msgs.append(
                    f"importance resampling of the Laplace draws is unreliable "
                    f"(Pareto k {k:.2f} > 0.7); use method=nuts"
                )
        ode_err = float(self.stats.get("solver_error", float("nan")))
        ode_bad = ode_err > SOLVER_ERROR_MAX
        if ode_bad:
            fixed_grid = cfg.solver in ("rk4", "quad")
            fix = "lower dt or use solver='tsit5'" if fixed_grid else "lower rtol/atol"
            msgs.append(
                f"the {cfg.solver} curves at the MAP differ from a reference solve "
                f"by {ode_err:.1e} (> {SOLVER_ERROR_MAX:g}); {fix}"
            )
        steps = np.asarray(self.stats.get("num_steps", np.zeros(1)))
        return {
            "method": cfg.method,
            "chains": self.shape[0],
            "draws": self.shape[1],
            "r_hat_max": max(rh, default=float("nan")),
            "ess_bulk_min": min(eb, default=float("nan")),
            "ess_tail_min": min(et, default=float("nan")),
            "divergences": div,
            "mean_leapfrog_steps": float(steps.mean()) if steps.size else 0.0,
            "chain_method": str(self.stats.get("chain_method", "")),
            "step_size": [float(e) for e in np.ravel(self.stats.get("step_size", []))],
            "timing_s": self.timing,
            "is_pareto_k": float(self.stats.get("is_pareto_k", float("nan"))),
            "solver_error": ode_err,
            "dtype": str(np.asarray(self.samples["z"]).dtype),
            "ok": not ode_bad and (not msgs or cfg.method != "nuts"),
            "warnings": msgs,
        }

    def predictive(
        self, *, n_points: int = 80, max_draws: int = 200, key: jax.Array | None = None
    ) -> dict[str, np.ndarray]:
        """Posterior predictive bands on a dense grid per run.

        Returns:
            ``t`` (T,), ``mean_q`` (3, R, T, N): 5/50/95% of the mean curve, and ``pred_q``
            (2, R, T, N): 5/95% including the evaluation noise at each agent's median
            n_eval (:func:`calibrate._new_run.evaluation_noise`, as one new run's forecast).
        """
        from ._new_run import agent_n_eval, evaluation_noise

        cm = self.model
        t = np.linspace(0.0, float(cm.ts[-1]), n_points)
        th = self.run_params(max_draws, key=key)  # (S, R, D) or (S, 1, D) if pooled
        th = np.broadcast_to(th, (th.shape[0], cm.n_runs, th.shape[2]))
        A = np.asarray(batched_curves(cm, jnp.asarray(th), t))  # (S, R, T, N)
        mean_q = np.quantile(A, [0.05, 0.5, 0.95], axis=0)
        draws = evaluation_noise(A, agent_n_eval(cm), np.random.default_rng(0))
        pred_q = np.quantile(draws, [0.05, 0.95], axis=0)
        return {"t": t, "mean_q": mean_q, "pred_q": pred_q}

    # -- output -------------------------------------------------------------------------
    def save(
        self,
        out: str | Path,
        *,
        figure: bool = True,
        summary: dict[str, dict[str, float]] | None = None,
    ) -> dict[str, Any]:
        """Write ``posterior.nc``, ``summary.json``, ``diagnostics.json``, ``config.json``,
        ``network.json``, ``latent.npz``, ``data.parquet`` and, for run-folder inputs,
        ``run_configs.json`` (both for ``recommend``), and
        (``figure``) ``predictive.png`` into folder ``out``.

        The folder is built under a temporary name and swapped in whole: a process killed
        while saving leaves the previous ``out`` (or none) intact, never a mix. JSON is
        strict (``null`` where a statistic is undefined).

        Args:
            out: The folder (replaced if it exists).
            figure: Also draw ``predictive.png``.
            summary: :meth:`summary`, if already computed.

        Returns:
            The diagnostics dict.

        Raises:
            OutputError: ``out`` cannot be written, or is a folder with files calibrate did
                not write (see :func:`check_output_folder`).
        """
        check_output_folder(out)
        summ = summary or self.summary()
        diag = self.diagnostics(summ)
        cm = self.model
        with atomic_dir(out) as tmp:
            write_json(tmp / "summary.json", summ)
            write_json(tmp / "diagnostics.json", diag)
            write_json(tmp / "config.json", cm.config.to_dict())
            write_link_rows(tmp / LINKS_FILE, cm.link_rows)
            write_json(tmp / "network.json", cm.network.to_spec(cm.name).to_dict())
            self.to_inference_data().to_netcdf(str(tmp / "posterior.nc"))
            np.savez(tmp / "latent.npz", **self.samples)
            if self.data_table is not None:
                self.data_table.to_parquet(tmp / "data.parquet")
            if self.run_configs:
                write_json(tmp / "run_configs.json", self.run_configs)
            if figure:
                from ._fit_plot import plot_predictive

                plot_predictive(self, tmp / "predictive.png")
            mark_output(tmp, FIT_COMMAND, [p.name for p in tmp.iterdir()], made=True)
        return diag


def load_fit(fit_dir: str | Path) -> Posterior:
    """Rebuild a :class:`Posterior` (its model, draws and data) from a folder written by
    :meth:`Posterior.save`.

    Raises:
        ConfigError: ``fit_dir`` is not such a folder.
    """
    d = Path(fit_dir)
    missing = [f for f in _FILES if not (d / f).is_file()]
    if missing:
        raise ConfigError(f"{str(d)!r} is not a fit folder (missing {', '.join(missing)})")
    cfg = FitConfig.load(d / "config.json")
    if cfg.logged_regulators:  # its regulators are the fitted runs' own
        raise ConfigError(f"{str(d)!r} was fitted with --regulators {cfg.regulators}: {NO_NEW_RUN}")
    try:
        spec = simulate.spec.NetworkSpec.from_dict(json.loads((d / "network.json").read_text()))
    except (ValueError, OSError) as err:
        raise ConfigError(f"{str(d)!r}: unreadable network.json ({err})") from None
    data = CurveData.from_table(read_table(d), source=str(d))
    configs = read_configs(d)
    if configs is not None:
        data = dataclasses.replace(data, configs=configs)
    cm = build_model(data, spec, cfg)
    rows = read_link_rows(d)  # None: a fit saved before the records (derived from its data)
    if rows is not None:
        if [(r.param, r.covariate) for r in rows] != [(r.param, r.covariate) for r in cm.link_rows]:
            raise ConfigError(f"{str(d)!r}: links.json does not match the fit's hierarchy")
        cm = dataclasses.replace(cm, link_rows=rows)
    samples = read_latent(d)
    return Posterior(cm, samples, {}, {}, data=data)
