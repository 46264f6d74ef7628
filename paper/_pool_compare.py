"""What the Pool-of-Agents study on the testbed adds to the old study's summary (issue 35
§2): K = 1 against K = 8 with intervals that resolve the difference or say they do not,
each simulator prediction checked against its cell, and the compute each cell costs
(adapter memory, wall time per step) for the stability-compute trade-off.

Rules (stated with the design, before the pool runs):

- **K = 1 vs K = 8**, per setting and pool method (grad, pbt, es; K = 1 is the single agent
  for all three): the ratio of the across-seed competence variances ``v8 / v1`` with its
  95 % interval ``[r / F(0.975; d8, d1), r / F(0.025; d8, d1)]`` (``d = seeds - 1``; the
  normal-theory F interval, the same approximation as each variance's chi-square interval);
  *resolved* when the interval excludes 1. Collapse rates: Fisher's exact test, two-sided.
- **A prediction is right** when the simulator's variance lies inside the cell's measured
  95 % interval, and its collapse fraction inside the cell's 95 % Wilson interval.
- **Compute**: adapter memory is the LoRA weights the run holds, ``K x roles x`` the
  trainable parameters of one member's adapter (counted by building the run's base
  architecture and its peft adapter), in MB of float32; time per step is the run's wall
  time over its steps (evaluations included), mean over seeds.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np


def variance_ratio(v_k: float, n_k: int, v_1: float, n_1: int) -> dict[str, Any]:
    """``v_k / v_1`` with its 95 % F interval and whether the interval excludes 1.

    Args:
        v_k: Variance across seeds at K (unbiased).
        n_k: Seeds at K (>= 2).
        v_1: Variance across seeds at K = 1 (unbiased, > 0).
        n_1: Seeds at K = 1 (>= 2).
    """
    from scipy.stats import f

    if min(n_k, n_1) < 2 or v_1 <= 0:
        raise ValueError(f"a variance ratio needs >= 2 seeds and v_1 > 0, got {n_k}, {n_1}")
    r = v_k / v_1
    lo, hi = r / f.ppf(0.975, n_k - 1, n_1 - 1), r / f.ppf(0.025, n_k - 1, n_1 - 1)
    return {"ratio": float(r), "ci95": [float(lo), float(hi)], "resolved": bool(hi < 1 or lo > 1)}


def collapse_difference(c_k: int, n_k: int, c_1: int, n_1: int) -> dict[str, Any]:
    """Collapse rates at K and at K = 1 and Fisher's exact two-sided p of their 2x2 table."""
    from scipy.stats import fisher_exact

    p = fisher_exact([[c_k, n_k - c_k], [c_1, n_1 - c_1]]).pvalue
    return {"rate_K": c_k / n_k, "rate_1": c_1 / n_1, "p_fisher": float(p)}


def k1_vs_k8(methods: dict[str, dict[str, Any]], k: int = 8) -> dict[str, Any]:
    """Per setting and pool method: :func:`variance_ratio` of the competence variance at
    ``k`` over the single agent's (None when the single agent's variance is 0), and
    :func:`collapse_difference` (``methods`` as in ``summary.json``)."""
    doc: dict[str, Any] = {}
    for setting, ms in methods.items():
        single = next((m for m in ms.values() if m["method"] == "grad" and m["K"] == 1), None)
        if single is None or single["variance"]["competence"] is None:
            continue
        v1, n1 = single["variance"]["competence"], single["seeds"]
        for m in ms.values():
            if m["K"] != k or m["variance"]["competence"] is None:
                continue
            doc.setdefault(setting, {})[m["method"]] = {
                "variance": variance_ratio(m["variance"]["competence"], m["seeds"], v1, n1)
                if v1 > 0
                else None,  # no spread at K = 1 to compare with
                "collapse": collapse_difference(
                    m["collapsed"], m["seeds"], single["collapsed"], n1
                ),
            }
    return doc


def ratio_power(ratio: float, n: int) -> float:
    """Power of the two-sided 95 % F test of equal variances (``n`` seeds in each cell) when
    the true variance ratio is ``ratio``."""
    from scipy.stats import f

    d = n - 1
    lo, hi = f.ppf(0.025, d, d), f.ppf(0.975, d, d)
    return float(f.cdf(lo / ratio, d, d) + f.sf(hi / ratio, d, d))


def design_power(
    seeds: int, pred: dict[str, Any], k: int = 8, power: float = 0.8, most: int = 2000
) -> dict[str, Any]:
    """What ``seeds`` per cell can resolve (descriptive; added after the rules above): the
    variance ratio below 1 detected with ``power``, and for each setting the simulator's
    predicted K = ``k`` / K = 1 ratio (grad and pbt) with the seeds per cell that would
    detect it (None: more than ``most``, or a predicted ratio of 1)."""
    from scipy.optimize import brentq

    def needed(r: float) -> int | None:
        if not 0 < r < 1 or ratio_power(r, most) < power:
            return None
        lo, hi = 2, most  # ratio_power grows with n: bisect on integers
        while lo < hi:
            mid = (lo + hi) // 2
            lo, hi = (mid + 1, hi) if ratio_power(r, mid) < power else (lo, mid)
        return lo

    doc: dict[str, Any] = {
        "seeds": seeds, "power": power,
        "detectable_ratio": float(brentq(lambda r: ratio_power(r, seeds) - power, 1e-6, 0.999)),
        "predicted": {},
    }  # fmt: skip
    for setting, sp in pred.get("settings", {}).items():
        for method, key in (("grad", "predicted"), ("pbt", "predicted_pbt")):
            cells = sp.get(key) or {}
            one = (sp.get("predicted") or {}).get("1")
            if one is None or str(k) not in cells or one["competence_variance"] <= 0:
                continue
            r = cells[str(k)]["competence_variance"] / one["competence_variance"]
            doc["predicted"].setdefault(setting, {})[method] = {
                "ratio": r,
                "power": ratio_power(r, seeds),
                "seeds_needed": needed(r),
            }
    return doc


def inside(x: float, lo: float, hi: float, tol: float = 1e-9) -> bool:
    """``lo <= x <= hi`` up to ``tol`` (a Wilson bound at 0 or 1 is computed, not exact)."""
    return bool(lo - tol <= x <= hi + tol)


def prediction_checks(methods: dict[str, dict[str, Any]], pred: dict[str, Any]) -> dict[str, Any]:
    """Each predicted grad/pbt cell against its measured cell (rules in the module doc).

    Returns:
        ``{setting: {label: {predicted_variance, measured_ci95, variance_right,
        predicted_collapse, collapse_ci95, collapse_right}}}`` and ``right``/``checked``
        counts per measure.
    """
    cells: dict[str, Any] = {}
    n = {"variance": [0, 0], "collapse": [0, 0]}
    for setting, s in pred.get("settings", {}).items():
        ms = methods.get(setting, {})
        for method, key in (("grad", "predicted"), ("pbt", "predicted_pbt")):
            for k, p in (s.get(key) or {}).items():
                m = next((m for m in ms.values() if m["method"] == method and m["K"] == int(k)),
                         None)  # fmt: skip
                if m is None or m["variance"]["competence_ci95"] is None:
                    continue
                lo, hi = m["variance"]["competence_ci95"]
                clo, chi = m["collapse_rate_ci95"]
                v_ok = inside(p["competence_variance"], lo, hi)
                c_ok = inside(p["collapse_fraction"], clo, chi)
                for what, ok in (("variance", v_ok), ("collapse", c_ok)):
                    n[what][0] += ok
                    n[what][1] += 1
                cells.setdefault(setting, {})[f"{method} K={k}"] = {
                    "predicted_variance": p["competence_variance"],
                    "measured_variance": m["variance"]["competence"],
                    "measured_ci95": [lo, hi], "variance_right": v_ok,
                    "predicted_collapse": p["collapse_fraction"],
                    "measured_collapse": m["collapsed"] / m["seeds"],
                    "collapse_ci95": [clo, chi], "collapse_right": c_ok,
                }  # fmt: skip
    return {"cells": cells, **{f"{w}_right": {"right": r, "checked": c} for w, (r, c) in n.items()}}


@functools.cache
def adapter_params(preset: str, r: int, targets: tuple[str, ...] | None = None) -> int:
    """Trainable LoRA parameters of one member's adapter on a base ``preset`` (GPT-2), counted
    by building the architecture and attaching the adapter as llm_runs does."""
    import warnings

    from peft import LoraConfig, get_peft_model

    from llm_runs import build_model, lora_targets

    model = build_model(preset, vocab=64)
    default, fan = lora_targets(model)
    cfg = LoraConfig(r=r, lora_alpha=2 * r, bias="none", fan_in_fan_out=fan,
                     target_modules=list(targets) if targets else default)  # fmt: skip
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        peft_model = get_peft_model(model, cfg)
    return int(sum(p.numel() for n, p in peft_model.named_parameters() if "lora_" in n))


def compute_cost(methods: dict[str, dict[str, Any]], cfg: Any, roles: int = 3) -> dict[str, Any]:
    """Per setting and cell: adapter memory (MB, float32) and wall seconds per step (the
    cell's ``s_per_step_mean``: :func:`paper._study_runs.step_seconds` of its runs, averaged)."""
    per_member = adapter_params(cfg.preset, 8)
    doc: dict[str, Any] = {"adapter_params_per_member": per_member, "cells": {}}
    for setting, ms in methods.items():
        for name, m in ms.items():
            doc["cells"].setdefault(setting, {})[name] = {
                "adapter_MB": m["K"] * roles * per_member * 4 / 2**20,
                "s_per_step": m.get("s_per_step_mean"),
                "variance": m["variance"]["competence"],
                "variance_ci95": m["variance"]["competence_ci95"],
                "collapse_rate": m["collapsed"] / m["seeds"],
                "collapse_ci95": m["collapse_rate_ci95"],
                "method": m["method"], "K": m["K"],
            }  # fmt: skip
    return doc


def tradeoff_figure(cost: dict[str, Any], path: Any) -> Any:
    """Variance and collapse rate (95 % intervals) against adapter memory and time per step,
    one row per setting."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from simulate import save_figure

    settings = list(cost["cells"])
    fig, axes = plt.subplots(len(settings), 2, figsize=(11, 3.6 * len(settings)), squeeze=False)
    marks = {"grad": "o", "pbt": "d", "es": "s"}
    for row, setting in zip(axes, settings, strict=True):
        cells = cost["cells"][setting].values()
        for method, mk in marks.items():
            got = sorted((c for c in cells if c["method"] == method or
                          (method != "grad" and c["method"] == "grad" and c["K"] == 1)),
                         key=lambda c: c["K"])  # fmt: skip
            got = [c for c in got if c["variance"] is not None and c["s_per_step"] is not None]
            if len(got) < 2:
                continue
            x = np.array([c["adapter_MB"] for c in got])
            v = np.array([c["variance"] for c in got])
            ci = np.array([c["variance_ci95"] for c in got])
            row[0].errorbar(x, v, yerr=_err(v, ci), fmt=mk + "-", capsize=3,
                            label=method)  # fmt: skip
            t = np.array([c["s_per_step"] for c in got])
            rate = np.array([c["collapse_rate"] for c in got])
            cr = np.array([c["collapse_ci95"] for c in got])
            row[1].errorbar(t, rate, yerr=_err(rate, cr), fmt=mk + "-",
                            capsize=3, label=method)  # fmt: skip
            for c, xi, vi, ti, ri in zip(got, x, v, t, rate, strict=True):
                for ax, pt in ((row[0], (xi, vi)), (row[1], (ti, ri))):
                    ax.annotate(f"K={c['K']}", pt, fontsize=6, xytext=(3, 3),
                                textcoords="offset points")  # fmt: skip
        row[0].set(xscale="log", yscale="log", xlabel="adapter memory (MB, float32)",
                   ylabel="variance of A_i across seeds",
                   title=f"{setting}: variance vs memory")  # fmt: skip
        row[1].set(xlabel="wall seconds per step (evaluations included)",
                   ylabel="collapse rate", ylim=(-0.05, 1.05),
                   title=f"{setting}: collapse vs time")  # fmt: skip
        for ax in row:
            ax.legend(fontsize=7)
    fig.tight_layout()
    return save_figure(fig, path, dpi=120)


def _err(x: np.ndarray, ci: np.ndarray) -> list[np.ndarray]:
    """Error bar lengths of values ``x`` with intervals ``ci`` (rounding can put a computed
    bound a hair past its value)."""
    return [np.maximum(x - ci[:, 0], 0.0), np.maximum(ci[:, 1] - x, 0.0)]
