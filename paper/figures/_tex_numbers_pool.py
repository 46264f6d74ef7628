"""The Pool-of-Agents macros of ``tex_numbers.py`` (split for module size)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from paper.figures._tex_common import PENDING, Macros, dig, fmt, fmt_ci, letters, read_json

SETTINGS = ("stable", "unstable")
POOL_METHODS = {  # summary label -> macro tag
    "GRPO (single)": "GradKOne",
    "grad K=2": "GradKTwo",
    "grad K=4": "GradKFour",
    "grad K=8": "GradKEight",
    "es K=2": "EsKTwo",
    "es K=4": "EsKFour",
    "es K=8": "EsKEight",
    "PPO (single)": "PPO",
}


def pool(m: Macros, results: Path) -> None:
    """Design, the simulator's stored prediction and (when finished) the measured pools."""
    root = results / "pool_old_testbed"
    cfg = read_json(root / "config.json")
    pred = read_json(root / "predictions.json")
    s = read_json(root / "summary.json")
    m.add("PoolStatus", "finished" if s is not None else "pending: the pool runs have not finished")
    m.add("PoolSeeds", PENDING if cfg is None else str(len(cfg["seeds"])))
    m.add("PoolSteps", fmt(dig(cfg, "steps"), 0))
    m.add("PoolPredictedFirst", predicted_first(pred, s))
    m.add("PoolGradKs", PENDING if cfg is None else and_list([k for k in cfg["grad_K"] if k > 1]))
    m.add("PoolEsKs", PENDING if cfg is None else and_list(cfg["es_K"]))
    c1 = dig(pred, "settings", "unstable", "predicted", "1", "collapse_fraction")
    c8 = dig(pred, "settings", "unstable", "predicted", "8", "collapse_fraction")
    protects = None if c1 is None or c8 is None else c8 < c1 - 0.05
    m.add(
        "PoolPredProtects",
        PENDING if protects is None else ("are predicted" if protects else "are not predicted"),
    )
    for setting in SETTINGS:
        tag = setting.capitalize()
        m.add(f"PoolLr{tag}", fmt(dig(cfg, "settings", setting), 3))
        p = dig(pred, "settings", setting)
        m.add(f"PoolSigma{tag}", fmt(dig(p, "sigma"), 3))
        m.add(f"PoolMeasuredVarOne{tag}", fmt(dig(p, "measured_K1_variance"), 2, 1e3))
        m.add(f"PoolProbeFloor{tag}", fmt(dig(p, "K1_probe_noise_floor"), 2, 1e3))
        for k in (1, 2, 4, 8):
            kk = f"K{letters(str(k))}"
            m.add(
                f"PoolPredVar{tag}{kk}",
                fmt(dig(p, "predicted", str(k), "competence_variance"), 2, 1e3),
            )
            m.add(
                f"PoolPredCollapse{tag}{kk}",
                fmt(dig(p, "predicted", str(k), "collapse_fraction"), 0, 100),
            )
        for label, mtag in POOL_METHODS.items():
            cell_macros(m, "Pool", f"{tag}{mtag}", dig(s, "methods", setting, label))
        m.add(f"PoolVerdict{tag}", verdict(dig(s, "methods", setting)))


def cell_macros(m: Macros, prefix: str, tag: str, row: Any) -> None:
    """A pool cell's ``<prefix>Var``, ``Collapsed`` and ``Final`` macros (``row``: a
    ``summary.json`` method entry, or None: pending)."""
    var = dig(row, "variance")
    v, ci = fmt(dig(var, "competence"), 2, 1e3), fmt_ci(dig(var, "competence_ci95"), 2, 1e3)
    m.add(f"{prefix}Var{tag}", PENDING if PENDING in (v, ci) else f"{v} {ci}")
    n, c = dig(row, "seeds"), dig(row, "collapsed")
    m.add(f"{prefix}Collapsed{tag}", PENDING if n is None or c is None else f"{c}/{n}")
    m.add(f"{prefix}Final{tag}", fmt(dig(row, "final_e2e"), 2))


def and_list(items: list[Any]) -> str:
    """``[2, 4, 8]`` -> ``"2, 4 and 8"``."""
    words = [str(x) for x in items]
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " and " + words[-1]


def predicted_first(pred: Any, summary: Any) -> str:
    """Whether the stored prediction predates the summary of the pool runs."""
    if pred is None:
        return "no prediction stored yet"
    if summary is None:
        return f"stored on {str(pred.get('created', PENDING))[:10]}, before the pool runs"
    created, ref = pred.get("created"), summary.get("predictions_created")
    same = created is not None and created == ref
    return f"stored on {str(created)[:10]}" + (
        "" if same else " (summary names another prediction)"
    )


def verdict(methods: Any) -> str:
    """Does the largest gradient pool's seed variance fall below the single agent's interval?"""
    one = dig(methods, "GRPO (single)", "variance")
    eight = dig(methods, "grad K=8", "variance")
    v1, ci1, v8 = dig(one, "competence"), dig(one, "competence_ci95"), dig(eight, "competence")
    if v1 is None or v8 is None or not isinstance(ci1, list):
        return PENDING
    where = "below" if v8 < ci1[0] else "above" if v8 > ci1[1] else "inside"
    return (
        f"the K = 8 pool's seed variance ({1e3 * v8:.2f}e-3) lies {where} the single agent's "
        f"95 % interval [{1e3 * ci1[0]:.2f}, {1e3 * ci1[1]:.2f}]e-3"
    )
