"""Figure of the Pool-of-Agents study: per setting, end-to-end accuracy over training
(mean ± sd over seeds) per method, and the across-seed competence variance against K,
measured (95 % bootstrap intervals) and predicted by the simulator."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from simulate import save_figure


def pool_figure(summary: dict[str, Any], path: Path) -> Path:
    """Draw the study figure from ``summary`` (see ``_pool_analysis.summarise``)."""
    import matplotlib
    import matplotlib.ticker

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    settings = list(summary["methods"])
    fig, axes = plt.subplots(len(settings), 2, figsize=(11, 3.6 * len(settings)), squeeze=False)
    for row, setting in zip(axes, settings, strict=True):
        ax = row[0]
        for name, m in summary["methods"][setting].items():
            x = np.array(m["steps"])
            mu, sd = np.array(m["e2e_mean_curve"]), np.array(m["e2e_sd_curve"])
            style = "--" if m["method"] == "es" else ":" if m["method"] == "ppo" else "-"
            (line,) = ax.plot(x, mu, style, label=name)
            ax.fill_between(x, mu - sd, mu + sd, color=line.get_color(), alpha=0.12)
        ax.set(title=f"{setting}: end-to-end accuracy (mean ± sd over seeds)",
               xlabel="optimizer step", ylabel="accuracy", ylim=(0, 1))  # fmt: skip
        ax.legend(fontsize=7, ncol=2)
        ax = row[1]
        for method, marker in (("grad", "o"), ("pbt", "d"), ("es", "s")):
            got = summary["variance_by_K"].get(setting, {}).get(method, {})
            if not got:
                continue
            ks = sorted(int(k) for k in got if got[k]["competence"] is not None)
            if not ks:
                continue
            v = np.array([got[str(k)]["competence"] for k in ks])
            ci = np.array([got[str(k)]["competence_ci95"] for k in ks])
            ax.errorbar(ks, v, yerr=[v - ci[:, 0], ci[:, 1] - v], fmt=marker + "-",
                        capsize=3, label=f"measured, {method}")  # fmt: skip
        pred = summary["predicted_variance_by_K"].get(setting)
        if pred:
            ks = sorted(int(k) for k in pred)
            ax.plot(ks, [pred[str(k)] for k in ks], "k^--", label="simulator (grad, split)")
        pred = summary.get("predicted_pbt_variance_by_K", {}).get(setting)
        if pred:
            ks = sorted(int(k) for k in pred)
            ax.plot(ks, [pred[str(k)] for k in ks], "kv:", label="simulator (pbt)")
        ax.set(xscale="log", yscale="log", xlabel="members per role K",
               ylabel="variance of A_i across seeds",
               title=f"{setting}: variance vs K")  # fmt: skip
        ax.set_xticks([1, 2, 4, 8], labels=["1", "2", "4", "8"])
        ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
        ax.legend(fontsize=7)
    fig.tight_layout()
    return save_figure(fig, path, dpi=120)
