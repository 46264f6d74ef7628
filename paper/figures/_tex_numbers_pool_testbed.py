"""The macros of the Pool-of-Agents study on the testbed (``pool/``, written by
``paper/pool_testbed.py``) for ``tex_numbers.py``: the design, ES's scanned learning rate,
every cell's seed variance, collapses, accuracy and cost, K = 1 against K = 8, and each
stored prediction checked. A missing file or field reads "pending"."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from paper.figures._tex_common import PENDING, Macros, dig, fmt, fmt_ci, letters, read_json
from paper.figures._tex_numbers_pool import and_list, cell_macros, predicted_first

SETTINGS = ("stable", "unstable")
METHODS = {"grad": "Grad", "pbt": "Pbt", "es": "Es"}
POOL_K = (2, 4, 8)
SINGLE = "REINFORCE (single)"  # the single agent's summary label (pool_testbed.single_label)
NAMES = {"grad": "gradient pools", "pbt": "PBT", "es": "ES"}  # method -> words in the text


def cells() -> dict[str, str]:
    """Summary label -> macro tag of every cell (``REINFORCE (single)`` is K = 1 of all methods)."""
    out = {SINGLE: "KOne"}
    for method, tag in METHODS.items():
        for k in POOL_K:
            out[f"{method} K={k}"] = f"{tag}K{letters(str(k))}"
    return out


def pool_testbed(m: Macros, results: Path) -> None:
    """Every ``\\ValPT...`` macro."""
    root = results / "pool"
    cfg = read_json(root / "config.json")
    pred = read_json(root / "predictions.json")
    scan = read_json(root / "scan.json")
    s = read_json(root / "summary.json")
    design(m, cfg, scan)
    m.add("PTPredictedFirst", predicted_first(pred, s))
    n_runs = (
        None
        if s is None
        else sum(c["seeds"] for ms in s["methods"].values() for lab, c in ms.items() if c["K"] > 1)
    )
    m.add("PTPoolRuns", PENDING if n_runs is None else str(n_runs))
    compute = dig(s, "compute", "cells")
    for setting in SETTINGS:
        tag = setting.capitalize()
        p = dig(pred, "settings", setting)
        for label, ctag in cells().items():
            cell_macros(m, "PT", f"{tag}{ctag}", dig(s, "methods", setting, label))
            m.add(f"PTStep{tag}{ctag}", fmt(dig(compute, setting, label, "s_per_step"), 2))
            m.add(f"PTPredVar{tag}{ctag}", predicted_variance(p, label))
            m.add(f"PTPredCollapse{tag}{ctag}", predicted_variance(p, label, "collapse_fraction"))
        for method, mtag in METHODS.items():
            c = dig(s, "k1_vs_k8", setting, method)
            ratio = dig(c, "variance")
            r, rci = fmt(dig(ratio, "ratio"), 2), fmt_ci(dig(ratio, "ci95"), 2)
            m.add(f"PTRatio{tag}{mtag}", PENDING if PENDING in (r, rci) else f"{r} {rci}")
            res = dig(ratio, "resolved")
            m.add(f"PTResolved{tag}{mtag}", PENDING if res is None else
                  ("resolved" if res else "not resolved"))  # fmt: skip
            p_f = dig(c, "collapse", "p_fisher")
            m.add(f"PTCollapseP{tag}{mtag}", PENDING if p_f is None else p_text(p_f))
    checks = dig(s, "prediction_checks")
    for what in ("variance", "collapse"):
        right, n = dig(checks, f"{what}_right", "right"), dig(checks, f"{what}_right", "checked")
        m.add(f"PTPredRight{what.title()}", PENDING if n is None else f"{right} of {n}")
    m.add("PTPredWrong", wrong_cells(checks))
    m.add("PTVerdictVariance", verdict_variance(dig(s, "k1_vs_k8")))
    m.add("PTVerdictCollapse", verdict_collapse(dig(s, "k1_vs_k8")))
    cost(m, dig(s, "compute"))
    power = dig(s, "power")
    m.add("PTDetectableRatio", fmt(dig(power, "detectable_ratio"), 2))
    m.add("PTPowerLevel", fmt(dig(power, "power"), 0, 100.0))
    for setting in SETTINGS:
        for method in ("grad", "pbt"):
            c = dig(power, "predicted", setting, method)
            tag = f"{setting.capitalize()}{METHODS[method]}"
            m.add(f"PTPredRatio{tag}", fmt(dig(c, "ratio"), 2))
            m.add(f"PTPredPower{tag}", fmt(dig(c, "power"), 2))
            need = dig(c, "seeds_needed")
            m.add(f"PTSeedsNeeded{tag}", PENDING if c is None else
                  (str(need) if need is not None else "more than 2000"))  # fmt: skip


def design(m: Macros, cfg: Any, scan: Any) -> None:
    """Settings, seeds, steps, PBT's exploit and ES's learning rate from the scan."""
    seeds, ks = dig(cfg, "seeds"), dig(cfg, "pool_K")
    m.add("PTSeeds", PENDING if seeds is None else str(len(seeds)))
    m.add("PTSteps", fmt(dig(cfg, "steps"), 0))
    m.add("PTPoolKs", PENDING if not ks else and_list(ks))
    m.add("PTResolvable", PENDING if not seeds else fmt(resolvable(len(seeds)), 1))
    m.add("PTLrStable", fmt(dig(cfg, "settings", "stable", "lr"), 3))
    m.add("PTLrUnstable", fmt(dig(cfg, "settings", "unstable", "lr"), 2))
    m.add("PTStalenessUnstable", fmt(dig(cfg, "settings", "unstable", "staleness"), 0))
    m.add("PTScaleXUnstable", fmt(dig(cfg, "settings", "unstable", "lr_scale.X"), 1))
    m.add("PTExploitEvery", fmt(dig(cfg, "exploit_every"), 0))
    m.add("PTExploitShare", fmt(dig(cfg, "exploit_frac"), 0, 100.0))
    ratios = dig(cfg, "es_ratios")
    m.add("PTEsRatios", PENDING if ratios is None else and_list([f"{r:g}" for r in ratios]))
    chosen = dig(scan, "ratio")
    m.add("PTEsRatio", PENDING if chosen is None else f"{chosen:g}")
    edge = None if chosen is None or ratios is None else chosen >= max(ratios)
    m.add("PTEsRatioWhere", PENDING if edge is None else
          ("the largest ratio scanned" if edge else "inside the scanned range"))  # fmt: skip
    means = dig(scan, "mean_final_e2e")
    m.add("PTEsScanFinals", PENDING if not means else and_list([fmt(v, 2) for v in means.values()]))


def resolvable(n: int) -> float:
    """The factor a ratio of two variances of ``n`` seeds each must exceed (either way) for
    its 95 % F interval to exclude 1: the F(n-1, n-1) 97.5 % quantile."""
    from scipy.stats import f

    return float(f.ppf(0.975, n - 1, n - 1))


def predicted_variance(p: Any, label: str, what: str = "competence_variance") -> str:
    """A grad or pbt cell's stored prediction: the competence variance (x 1e3), or with
    ``what="collapse_fraction"`` the collapse fraction; "--" for ES (not predicted)."""
    if label.startswith("es "):
        return "--"
    k = "1" if label == SINGLE else label.split("=")[1]
    key = "predicted_pbt" if label.startswith("pbt ") else "predicted"
    return fmt(dig(p, key, k, what), 2, 1e3 if what == "competence_variance" else 1.0)


def wrong_cells(checks: Any) -> str:
    """The cells whose stored prediction fell outside the measured interval, as text."""
    if checks is None:
        return PENDING
    wrong = [f"{NAMES[label.split()[0]]} K = {label.split('=')[1]} ({setting}, {what})"
             if "=" in label else f"{label} ({setting}, {what})"
             for setting, cs in checks["cells"].items() for label, c in cs.items()
             for what in ("variance", "collapse") if not c[f"{what}_right"]]  # fmt: skip
    return "none" if not wrong else and_list(wrong)


def verdict_variance(k18: Any) -> str:
    """Which K = 8 / K = 1 variance ratios the F interval resolves, and which way."""
    if not k18:
        return PENDING
    got, n = [], 0
    for setting, ms in k18.items():
        for method, c in ms.items():
            r = c.get("variance")
            if r is None:
                continue
            n += 1
            if r["resolved"]:
                way = "larger" if r["ratio"] > 1 else "smaller"
                got.append(
                    f"{NAMES[method]} in the {setting} setting ({way}, ratio {r['ratio']:.2f})"
                )
    if not got:
        return f"none of the {n} ratios is resolved"
    return f"{len(got)} of the {n} ratios {'is' if len(got) == 1 else 'are'} resolved: " + (
        and_list(got)
    )


def verdict_collapse(k18: Any) -> str:
    """The K = 8 collapse rates that differ from the single agent's (Fisher p < 0.05)."""
    if not k18:
        return PENDING
    got = []
    for setting, ms in k18.items():
        for method, c in ms.items():
            col = c["collapse"]
            if col["p_fisher"] < 0.05:
                got.append(f"{NAMES[method]} in the {setting} setting ({col['rate_1']:.0%} of "
                           f"single runs against {col['rate_K']:.0%} at K = 8, "
                           f"{p_text(col['p_fisher'])})")  # fmt: skip
    return "no collapse rate differs at p < 0.05" if not got else and_list(got)


def p_text(p: float) -> str:
    """``p = 0.012``, or ``p below 0.001`` (words: ``<`` in LaTeX's text mode is another
    glyph)."""
    return "p below 0.001" if p < 0.001 else f"p = {p:.3f}"


def cost(m: Macros, compute: Any) -> None:
    """Adapter memory per member and the time per step of K = 8 over K = 1 per method."""
    per = dig(compute, "adapter_params_per_member")
    m.add("PTParamsPerMember", PENDING if per is None else f"{per:,}".replace(",", "{,}"),
          raw=True)  # fmt: skip
    m.add("PTMemKOne", fmt(dig(compute, "cells", "stable", SINGLE, "adapter_MB"), 2))
    m.add("PTMemKEight", fmt(dig(compute, "cells", "stable", "grad K=8", "adapter_MB"), 2))
    for method, mtag in METHODS.items():
        for setting in SETTINGS:
            one = dig(compute, "cells", setting, SINGLE, "s_per_step")
            eight = dig(compute, "cells", setting, f"{method} K=8", "s_per_step")
            m.add(f"PTStepRatio{setting.capitalize()}{mtag}",
                  PENDING if one is None or eight is None else fmt(eight / one, 2))  # fmt: skip
