"""Motif selection: fit candidate networks, rank them by expected log predictive density,
and say which candidates the data cannot tell apart and which edge signs and gates it
identifies.

Each candidate's elpd comes from PSIS-LOO (ArviZ) unless a Pareto k exceeds
:data:`KHAT_MAX` (the importance sampling behind PSIS-LOO is then unreliable); those
candidates are refitted by exact K-fold cross-validation (:mod:`calibrate._kfold`) and
ranked by their K-fold elpd. The candidates within :data:`~calibrate._compare.ELPD_BAND`
se of the difference from the best form the indistinguishable set; an edge sign or gate
is identified when all of them agree on it.

Speed: every candidate of one wiring (all 16 FFL presets) is fitted through one compiled
likelihood, gradient and pointwise log-likelihood (signs and gates are array data, see
:class:`calibrate.CurveModel`); only the first candidate compiles, and the others are then
fitted ``workers`` at a time (one per CPU core, at most 4: each fit runs mostly on one
core). The fits are independent, so the result does not depend on ``workers``. Saving
draws the predictive figure and keeps the pointwise log-likelihood only for the
indistinguishable set unless asked (``figures="all"``).
"""

from __future__ import annotations

import copy
import dataclasses
import time
import warnings
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import jax
import numpy as np

from simulate import mark_output
from simulate.common import atomic_dir, write_json

from .._build import build_model
from .._compare import ELPD_BAND, compare_pointwise, identified_structure, replicate_strata
from .._config import ConfigError, FitConfig
from .._curve_data import CurveData
from .._fit import fit_model
from .._kfold import kfold_pointwise
from .._model import CurveModel
from .._posterior import Posterior, _az
from ._candidates import Candidate
from ._candidates import candidates as candidates
from ._fit import Bar, default_workers, laplace_candidate

__all__ = ["FIGURES", "KHAT_MAX", "Selection", "candidates", "select"]

KHAT_MAX = 0.7  # PSIS-LOO is unreliable for a point with a larger Pareto k (Vehtari et al.)
FIGURES = ("best", "all", "none")  # which saved fits are complete (see Selection.save)


@dataclasses.dataclass
class Selection:
    """Result of :func:`select`.

    Attributes:
        ranking: Best first, one dict per candidate: ``label``, ``motif``, ``gate``,
            ``elpd`` (what the ranking uses), ``se``, ``d_elpd`` (best minus this),
            ``dse`` (se of that difference), ``weight`` (stacking), ``indistinguishable``,
            ``elpd_method`` (``psis-loo`` or ``kfold``), the PSIS-LOO ``elpd_loo``,
            ``se_loo``, ``p_loo``, ``pareto_k_max``, ``n_pareto_k_high`` and ``warning``
            (a Pareto k above :data:`KHAT_MAX`), and ``elpd_kfold`` (or None).
        posteriors: Label -> :class:`Posterior` of each candidate (fitted on all data).
        indistinguishable: Labels within ``band`` se of the difference from the best.
        identified: Edge -> sign (``+``, ``-``, ``none``) and ``gate`` -> gate on which all
            indistinguishable candidates agree; None where they do not.
        warnings: One-line warnings (high Pareto k and what was done about it).
        kfold: The K-fold settings and the labels that used it.
        timing: Seconds: ``fits_s``, ``kfold_s``, ``total_s`` (wall), ``cpu_s`` (CPU time
            of all threads), ``workers``; :meth:`save` adds ``save_s`` and ``save_cpu_s``.
        band: Width of the indistinguishable set (se of the difference).
        blocks: The se of a difference from the blocks (run, agent) (:func:`select`).
        fit_diagnostics: Label -> each saved fit's diagnostics (filled by :meth:`save`).
    """

    ranking: list[dict[str, Any]]
    posteriors: dict[str, Posterior]
    indistinguishable: list[str] = dataclasses.field(default_factory=list)
    identified: dict[str, str | None] = dataclasses.field(default_factory=dict)
    warnings: list[str] = dataclasses.field(default_factory=list)
    kfold: dict[str, Any] = dataclasses.field(default_factory=dict)
    timing: dict[str, float] = dataclasses.field(default_factory=dict)
    band: float = ELPD_BAND
    blocks: bool = False
    fit_diagnostics: dict[str, dict[str, Any]] = dataclasses.field(default_factory=dict)
    replicates: bool = False

    @property
    def best(self) -> dict[str, Any]:
        """The top-ranked candidate."""
        return self.ranking[0]

    def to_dict(self) -> dict[str, Any]:
        """What ``selection.json`` holds."""
        return {
            "best": self.best["label"],
            "criterion": (
                f"elpd (PSIS-LOO; exact K-fold where a Pareto k > {KHAT_MAX}); "
                f"indistinguishable: d_elpd <= {self.band:g} x dse (se of the difference"
                + (", from its sums per run and agent" if self.blocks else "")
                + (", stratified by condition and agent)" if self.replicates else ")")
            ),
            "indistinguishable": self.indistinguishable,
            "identified": self.identified,
            "ranking": self.ranking,
            "warnings": self.warnings,
            "kfold": self.kfold,
            "timing_s": self.timing,
        }

    def report(self) -> list[str]:
        """The console table (best first, ``*`` marks the indistinguishable set), the set
        and what it identifies."""
        head = f"  {'network':<10}{'elpd':>9}{'se':>7}{'d_elpd':>8}{'dse':>7}{'weight':>8}"
        lines = [f"{head}{'k_max':>7}  elpd from"]
        for r in self.ranking:
            src = "PSIS-LOO" if r["elpd_method"] == "psis-loo" else f"{self.kfold['k']}-fold CV"
            lines.append(
                f"{'*' if r['indistinguishable'] else ' '} {r['label']:<10}{r['elpd']:>9.1f}"
                f"{r['se']:>7.1f}{r['d_elpd']:>8.1f}{r['dse']:>7.1f}{r['weight']:>8.2f}"
                f"{r['pareto_k_max']:>7.2f}  {src}"
            )
        lines.append(
            f"* indistinguishable (elpd within {self.band:g} se of the difference from the "
            f"best): {', '.join(self.indistinguishable)}"
        )
        known = [f"{k} {v}" for k, v in self.identified.items() if v is not None]
        unknown = [k for k, v in self.identified.items() if v is None]
        lines.append(
            f"identified by the data: {', '.join(known) or 'nothing'}; "
            f"not identified: {', '.join(unknown) or 'nothing'}"
        )
        return lines

    def complete_fits(self, figures: str = "best") -> list[str]:
        """Labels of the fits :meth:`save` writes complete: the indistinguishable set
        (``best``, ``none``) or every candidate (``all``)."""
        if figures not in FIGURES:
            raise ConfigError(f"figures must be one of {', '.join(FIGURES)}, got {figures!r}")
        return list(self.posteriors) if figures == "all" else list(self.indistinguishable)

    def save(
        self, out: str | Path, *, figure: bool = True, fits: bool = False, figures: str = "best"
    ) -> Path:
        """Write the folder ``out`` as a whole (built under a temporary name, then swapped
        in): ``selection.json``, ``selection.png`` and (``fits``) each fit in
        ``fits/LABEL``.

        A fit of :meth:`complete_fits` is saved as :meth:`Posterior.save` writes it, with
        ``predictive.png`` (unless ``figures="none"``); any other fit without the figure
        and without the pointwise log-likelihood group in ``posterior.nc`` (17 MB of
        4 x 1000 draws x 600 points; ``selection.json`` holds its elpd). Everything else
        (summary, diagnostics, draws, data: what ``predict`` and ``recommend`` read) is
        saved for every fit. The time taken is added to :attr:`timing` (``save_s``,
        ``save_cpu_s``) and each fit's diagnostics to :attr:`fit_diagnostics`.

        Args:
            out: The folder (replaced if it exists).
            figure: False: no figure at all (as ``figures="none"``).
            fits: Also save each candidate's fit.
            figures: ``best`` (default): figures of the indistinguishable set; ``all``:
                every fit complete, with its figure; ``none``: no figures.

        Returns:
            The path of ``selection.json``.

        Raises:
            ConfigError: ``figures`` is not one of :data:`FIGURES`.
        """
        figures = figures if figure else "none"
        complete = set(self.complete_fits(figures))
        t0, c0 = time.perf_counter(), time.process_time()
        out = Path(out)
        with atomic_dir(out) as tmp:
            if figures != "none":
                from .._fit_plot import plot_selection

                rows = [{**r, "elpd_loo": r["elpd"]} for r in self.ranking]  # the ranked elpd
                plot_selection(rows, tmp / "selection.png")
            for label, post in self.posteriors.items() if fits else []:
                full = label in complete
                self.fit_diagnostics[label] = _saved_form(post, full).save(
                    tmp / "fits" / label, figure=full and figures != "none"
                )
            self.timing["save_s"] = time.perf_counter() - t0
            self.timing["save_cpu_s"] = time.process_time() - c0
            write_json(tmp / "selection.json", self.to_dict())
            mark_output(tmp, "calibrate fit", [p.name for p in tmp.iterdir()], made=True)
        return out / "selection.json"


def _shared(cm: CurveModel) -> CurveModel:
    """``cm`` without its label, the one static field in which candidates of one wiring
    differ: their compiled programs are then one."""
    return dataclasses.replace(cm, name="")


def _saved_form(post: Posterior, complete: bool) -> Posterior:
    """A shallow copy of ``post`` whose predictive bands come from the shared program
    (its figure would otherwise compile the curves once per candidate) and, unless
    ``complete``, whose ``posterior.nc`` leaves out the pointwise log-likelihood."""
    shared = copy.copy(post)
    shared.model = _shared(post.model)
    out = copy.copy(post)
    out.predictive = shared.predictive  # type: ignore[method-assign]
    if not complete:

        def light() -> Any:
            full = post.to_inference_data()
            groups = {g: full[g] for g in full.groups() if g != "log_likelihood"}
            return type(full)(**groups)

        out.to_inference_data = light  # type: ignore[method-assign]
    return out


def _loo(az: Any, post: Posterior) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return az.loo(post.to_inference_data(), pointwise=True)


_SE_KEYS = ("elpd", "se", "d_elpd", "dse", "dse_points", "dse_blocks", "dse_df")


def select(
    data: CurveData,
    cands: Sequence[Candidate] | str = "auto",
    config: FitConfig | None = None,
    *,
    key: jax.Array,
    nodes: tuple[str, ...] | None = None,
    log: Callable[[str], None] | None = None,
    progress: bool = False,
    kfold: int = 5,
    band: float = ELPD_BAND,
    workers: int | None = None,
    blocks: bool = False,
    replicates: bool = False,
) -> Selection:
    """Fit each candidate network and rank them by elpd, with stacking weights, the set
    the data cannot tell apart and the edge signs and gates it identifies.

    Args:
        data: The curves.
        cands: ``"auto"`` (16 FFL presets) or a list from :func:`candidates` /
            ``(label, "", network_spec)`` tuples.
        config: Fit options shared by all candidates.
        key: PRNG key (keyword-only).
        nodes: Agent names for X, Y, Z.
        log: One-line progress callback (used when ``progress`` is off).
        progress: A progress bar across the candidate fits (named in its postfix).
        kfold: Folds of the exact K-fold cross-validation that replaces PSIS-LOO for a
            candidate with a Pareto k above :data:`KHAT_MAX` (0: keep PSIS-LOO and warn).
        band: Width of the indistinguishable set, in se of the elpd difference.
        workers: Candidates fitted at a time after the first (default: the CPU cores
            this process may use, at most 4); the result does not depend on it.
        blocks: The se of an elpd difference from its sums per run and agent
            (:func:`calibrate._compare.compare_pointwise`), not per evaluation.
        replicates: As ``blocks``, stratified by the run's condition (its config apart
            from its seed, :meth:`CurveData.conditions`) and agent.

    Raises:
        ConfigError: Fewer than 2 candidates, ``kfold`` of 1 or below 0, ``workers``
            below 1, or ``replicates`` with a run that has no replicate.
    """
    t0, c0 = time.perf_counter(), time.process_time()
    az = _az()
    cfg = config or FitConfig()
    say = log or (lambda s: None)
    cl = candidates("auto") if cands == "auto" else list(cands)
    if len(cl) < 2:
        raise ConfigError("model selection needs >= 2 candidates")
    if kfold < 0 or kfold == 1 or isinstance(kfold, bool):
        raise ConfigError(f"kfold must be 0 (off) or an integer >= 2, got {kfold!r}")
    workers = default_workers() if workers is None else workers
    blocks = blocks or replicates
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise ConfigError(f"workers must be an integer >= 1, got {workers!r}")
    labels = [f"{m}-{g}" if g else m for m, g, _ in cl]
    models = {
        lb: build_model(data, net, cfg, nodes=nodes)
        for lb, (_, _, net) in zip(labels, cl, strict=True)
    }
    meta = {lb: (m, g) for lb, (m, g, _) in zip(labels, cl, strict=True)}
    cm0 = models[labels[0]]  # every candidate orders the observations alike
    groups = np.asarray(cm0.run_idx) * len(cm0.network.names) + np.asarray(cm0.node_idx)
    strata = replicate_strata(data.conditions(), cm0, groups) if replicates else None
    bar = Bar(len(cl), progress, say)
    posts: dict[str, Posterior] = {}
    loos: dict[str, Any] = {}

    def fit_one(i: int) -> None:
        lb = labels[i]
        bar.step(f"fitting {lb}")
        k_i = jax.random.fold_in(key, i)
        if cfg.method == "laplace":  # PSIS-LOO from the importance sampler's proposals
            post, loo = laplace_candidate(_shared(models[lb]), key=k_i, data=data)
        else:
            post = fit_model(_shared(models[lb]), key=k_i, data=data)
            post.log_likelihood()  # on the shared program
            loo = _loo(az, post)
        post.model = models[lb]  # the label back on
        posts[lb], loos[lb] = post, loo
        bar.done()

    quiet = warnings.catch_warnings()  # entered and left here, around the worker threads
    quiet.__enter__()
    warnings.filterwarnings("ignore", "The line search algorithm did not converge")  # BFGS's
    try:
        fit_one(0)  # compiles the programs the others share
        if workers == 1:
            for i in range(1, len(labels)):
                fit_one(i)
        else:
            pool = ThreadPoolExecutor(workers, thread_name_prefix="select")
            try:
                for f in [pool.submit(fit_one, i) for i in range(1, len(labels))]:
                    f.result()  # re-raises a fit's error
            finally:
                pool.shutdown(wait=True, cancel_futures=True)
        t_fits = time.perf_counter() - t0
        khat = {lb: np.asarray(loos[lb].pareto_k).ravel() for lb in labels}
        high = [lb for lb in labels if np.max(khat[lb]) > KHAT_MAX]
        pointwise = {lb: np.asarray(loos[lb].loo_i).ravel() for lb in labels}
        method = dict.fromkeys(labels, "psis-loo")
        msgs, kf_elpd = [], {}
        for lb in high:
            msgs.append(
                f"{lb}: Pareto k up to {np.max(khat[lb]):.2f} "
                f"({int(np.sum(khat[lb] > KHAT_MAX))} point(s) > {KHAT_MAX}), PSIS-LOO is "
                + (f"unreliable; its elpd is from exact {kfold}-fold CV" if kfold else "unreliable")
            )
        if kfold and high:
            bar.grow(kfold * len(high))
        t1 = time.perf_counter()
        for lb in high if kfold else []:
            j = labels.index(lb)

            def draws(cm: CurveModel, k: jax.Array, f: int, lb: str = lb) -> dict[str, Any]:
                bar.step(f"{lb}: {kfold}-fold CV, fold {f + 1}")
                if cfg.method == "laplace":  # warm start: the MAP on all the data
                    x0 = np.concatenate([np.ravel(posts[lb].map_params[n]) for n in cm.sites()])
                    p, _ = laplace_candidate(cm, key=k, x0=x0)
                else:
                    p = fit_model(cm, key=k)
                bar.done()
                return {n: v.reshape(-1, *v.shape[2:]) for n, v in p.samples.items()}

            pw, _ = kfold_pointwise(
                _shared(models[lb]), draws, k=kfold, key=jax.random.fold_in(key, 10_000 + j)
            )
            pointwise[lb], method[lb], kf_elpd[lb] = pw, "kfold", float(pw.sum())
    finally:
        bar.close()
        quiet.__exit__(None, None, None)
    rows = compare_pointwise(pointwise, band=band, blocks=groups if blocks else None, strata=strata)
    ranking = []
    for r in rows:
        lb, loo = r["label"], loos[r["label"]]
        ranking.append(
            {
                "label": lb,
                "motif": meta[lb][0],
                "gate": meta[lb][1],
                **{k: r[k] for k in (*_SE_KEYS, "weight") if k in r},
                "indistinguishable": r["indistinguishable"],
                "elpd_method": method[lb],
                "elpd_loo": float(loo.elpd_loo),
                "se_loo": float(loo.se),
                "p_loo": float(loo.p_loo),
                "pareto_k_max": float(np.max(khat[lb])),
                "n_pareto_k_high": int(np.sum(khat[lb] > KHAT_MAX)),
                "warning": bool(np.max(khat[lb]) > KHAT_MAX),
                "elpd_kfold": kf_elpd.get(lb),
            }
        )
    indist = [r["label"] for r in ranking if r["indistinguishable"]]
    ident = identified_structure([models[lb].network for lb in indist])
    kf_info = {
        "k": kfold,
        "folds": "evaluation points (run, step), each run's steps interleaved over the folds",
        "khat_max": KHAT_MAX,
        "candidates": [lb for lb in labels if method[lb] == "kfold"],
    }
    t_end = time.perf_counter()
    timing = {
        "fits_s": t_fits,
        "kfold_s": t_end - t1,
        "total_s": t_end - t0,
        "cpu_s": time.process_time() - c0,
        "workers": workers,
    }
    return Selection(ranking, posts, indist, ident, msgs, kf_info, timing, band, blocks,
                     replicates=replicates)  # fmt: skip
