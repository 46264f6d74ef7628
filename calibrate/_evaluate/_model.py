"""The motif model's forecasts of held-out settings, as :class:`Forecast` rows."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ._forecast import FORECAST_GROUPS, Forecast

__all__ = ["model_forecasts"]


def model_forecasts(
    post: Any,
    settings: Sequence[Mapping[str, float]],
    *,
    horizon: float,
    n_eval: int,
    draws: int = 400,
    name: str = "motif model",
    bands: Sequence[str] = ("new_run", "mean"),
    extrapolation_sd: float = 0.0,
) -> tuple[list[Forecast], dict[str, Any] | None]:
    """A fit's forecasts of ``settings`` through :func:`calibrate.predict`: one new run's
    (``new_run``: fresh run effects, seed spread, evaluation noise) and the mean curve's
    (``mean``, plus binomial evaluation noise at ``n_eval``), each named ``<name> (new run)``
    or ``<name> (mean curve)``; and the fit's seed-spread note.

    Args:
        post: A :class:`calibrate.Posterior` whose links cover the settings' fields.
        settings: The settings, one forecast row each.
        horizon: The step whose competence is forecast.
        n_eval: Probes per evaluation of a new run.
        draws: Posterior draws (samples per forecast).
        name: The method's name.
        bands: Which forecasts, in order.
        extrapolation_sd: Links bent beyond the pilots' range (:func:`calibrate.predict`).
    """
    import dataclasses

    from .._predict._core import predict

    pred = predict(post, list(settings), steps=horizon, max_draws=draws, bands=False,
                   n_eval=n_eval, extrapolation_sd=extrapolation_sd)  # fmt: skip
    agents = tuple(pred.agents)
    rng = np.random.default_rng(0)
    out = []
    for band in bands:
        p = dataclasses.replace(pred, band=band)
        finals = np.transpose(np.asarray(p.headline()[0], dtype=float), (0, 2, 1))  # (H, N, M)
        if band == "mean":  # as the study stored it: the mean curve's final + evaluation noise
            finals = rng.binomial(n_eval, np.clip(np.nan_to_num(finals, nan=0.5), 0, 1)) / n_eval
        _, net = p.groups()
        probs = np.stack([net[g] for g in FORECAST_GROUPS], axis=1)
        label = "new run" if band == "new_run" else "mean curve"
        out.append(Forecast(f"{name} ({label})", agents, finals, probs))
    return out, pred.seed_spread
