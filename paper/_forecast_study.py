"""Phases of the forecast experiment (driver and design: paper/forecast_study.py): the pilots'
fit, the forecasts stored before any held-out run, and the scores per split."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

import simulate
from calibrate import fit_runs, load_fit
from llm_runs.knobs import hierarchy_links
from paper import _forecast_baselines as fb
from paper._forecast_report import score_all, write_outputs
from paper._regime_report import group_of, probe_size
from paper._study import store_once
from paper._study_runs import archive_runs
from simulate.common import write_json

__all__ = ["fit_phase", "observe", "predict_phase", "split_scores", "summary_phase"]

#: The baselines fitted on the pilots before the held-out runs (the sigmoid, which needs a
#: held-out run's own prefix, is made at the summary).
STORED = ("nearest pilot", "GP over knobs", "GP classifier")


def _knobs(cfg: Any) -> tuple[str, ...]:
    return ("rl.lr", "rl.staleness", cfg.third)


def _folders(cfg: Any, runs: Path, phase: str) -> list[tuple[Path, tuple[int, int, int]]]:
    from paper._forecast_design import run_name

    return [(runs / run_name(*j), cfg.cell_of(j)) for j in cfg.jobs(phase)]


def observe(cfg: Any, runs: Path, phase: str, n_eval: int) -> list[dict[str, Any]]:
    """Every finished run of a phase as a forecast target: its setting, cell, split, curves,
    final competences and regime group (the one collapse rule for real runs)."""
    import llm_runs

    out = []
    for folder, cell in _folders(cfg, runs, phase):
        log = llm_runs.read_run(folder)
        wide = log.competence()
        agents = list(wide.columns)
        curves = wide.to_numpy(dtype=float)
        regime = simulate.classify_observed(list(wide.index), curves, n_eval, names=tuple(agents))
        out.append({
            "name": folder.name, "cell": list(cell), "split": cfg.split(cell),
            "setting": cfg.setting(cell), "group": group_of(regime["regime"]),
            "final": {a: float(wide[a].dropna().iloc[-1]) for a in agents},
            "steps": [int(s) for s in wide.index],
            "curves": {a: [float(v) for v in wide[a]] for a in agents},
        })  # fmt: skip
    return out


def fit_phase(cfg: Any, runs: Path, out: Path) -> None:
    """``calibrate fit`` of the pilot runs (the design's motif and gate, the knob schema's
    default links of the three knobs), kept when it exists."""
    folders = [f for f, _ in _folders(cfg, runs, "pilots")]
    missing = [f.name for f in folders if not (f / "manifest.json").is_file()]
    if missing:
        raise RuntimeError(f"pilot runs missing ({missing[:3]}...): run --phase pilots first")
    links = write_json(out / "links.json", hierarchy_links(_knobs(cfg)))
    args = ["--motif", cfg.motif, "--gate", cfg.gate, "--hierarchy", str(links),
            "--method", cfg.fit_method]  # fmt: skip
    fit_runs(folders, out / "fit", args=args, log=out / "fit.log")


def _targets(cfg: Any) -> list[dict[str, Any]]:
    """The held-out settings, in cell order (one forecast per setting, every seed scored)."""
    cells = [c for c in cfg.cells() if cfg.split(c) != "pilot"]
    return [{"cell": list(c), "split": cfg.split(c), "setting": cfg.setting(c)} for c in cells]


def _encode(f: fb.Forecast) -> dict[str, Any]:
    return {"method": f.method, "agents": list(f.agents),
            "samples": np.round(f.samples, 4).tolist(),
            "probs": np.round(f.probs, 6).tolist()}  # fmt: skip


def _decode(d: dict[str, Any]) -> fb.Forecast:
    return fb.Forecast(d["method"], tuple(d["agents"]), np.asarray(d["samples"], dtype=float),
                       np.asarray(d["probs"], dtype=float))  # fmt: skip


def predict_phase(cfg: Any, runs: Path, out: Path) -> None:
    """Every held-out setting's forecasts — the motif model's (one new run, mean curve) and
    the baselines fitted on the pilots — stored once in ``predictions.json``."""
    from paper._forecast_report import model_forecasts

    def make() -> dict[str, Any]:
        fit = out / "fit"
        if not (fit / "posterior.nc").is_file():
            raise RuntimeError(f"{fit} holds no fit: run --phase fit first")
        first = _folders(cfg, runs, "pilots")[0][0]
        n_eval = probe_size(first)
        pilots = observe(cfg, runs, "pilots", n_eval)
        targets = _targets(cfg)
        settings = [t["setting"] for t in targets]
        rng = np.random.default_rng(0)
        forecasts, spread = model_forecasts(load_fit(fit), [{"setting": s} for s in settings],
                                            float(cfg.steps), n_eval, cfg.draws)  # fmt: skip
        kw = {"n_eval": n_eval, "draws": cfg.draws, "rng": rng}
        knobs = _knobs(cfg)
        forecasts += [
            fb.nearest_pilot(pilots, settings, knobs, **kw),
            dataclasses_replace(fb.gp_finals(pilots, settings, knobs, seed=0, **kw),
                                "GP over knobs"),
            dataclasses_replace(fb.gp_groups(pilots, settings, knobs, seed=0), "GP classifier"),
        ]  # fmt: skip
        return {"n_eval": n_eval, "targets": targets, "model_seed_spread": spread,
                "pilot_groups": {p["name"]: p["group"] for p in pilots},
                "forecasts": [_encode(f) for f in forecasts]}  # fmt: skip

    doc = store_once(out / "predictions.json", make)
    archive_runs(runs, out)
    print(f"  predictions stored {doc['created']} ({len(doc['targets'])} settings)", flush=True)


def dataclasses_replace(f: fb.Forecast, method: str) -> fb.Forecast:
    """``f`` under another name (the design's method names)."""
    return fb.Forecast(method, f.agents, f.samples, f.probs)


def _per_run(f: fb.Forecast, targets: list[dict], held: list[dict]) -> fb.Forecast:
    """A per-setting forecast repeated for every held-out run of its setting."""
    index = {tuple(t["cell"]): h for h, t in enumerate(targets)}
    rows = [index[tuple(r["cell"])] for r in held]
    return fb.Forecast(f.method, f.agents, f.samples[rows], f.probs[rows])


def split_scores(
    forecasts: list[fb.Forecast], held: list[dict], pilots: list[dict], design: dict[str, Any],
    n_eval: int, *, rng: np.random.Generator,
) -> tuple[dict[str, Any], tuple[str, ...]]:  # fmt: skip
    """:func:`score_all` per split of the held-out runs (``interpolation``, ``extrapolation``,
    ``all``; a split without runs left out): the ``all`` scores with ``summary`` as
    ``{metric: {split: {method: value}}}``, ``methods_by_split`` and ``n_runs``; and the
    splits scored."""
    result: dict[str, Any] = {}
    for split in ("interpolation", "extrapolation", "all"):
        keep = [i for i, r in enumerate(held) if split == "all" or r["split"] == split]
        if not keep:
            continue
        fs = [fb.Forecast(f.method, f.agents, f.samples[keep], f.probs[keep])
              for f in forecasts]  # fmt: skip
        result[split] = score_all(fs, [held[i] for i in keep], pilots, design, n_eval, rng=rng)
    splits = tuple(result)
    scores = dict(result["all"])
    scores["summary"] = {m: {sp: result[sp]["summary"][m]["heldout"] for sp in splits}
                         for m in scores["summary"]}  # fmt: skip
    scores["methods_by_split"] = {sp: result[sp]["methods"] for sp in splits}
    scores["n_runs"] = {sp: result[sp]["n_heldout_runs"] for sp in splits}
    return scores, splits


def summary_phase(cfg: Any, runs: Path, out: Path) -> None:
    """Scores of every method per split (``interpolation``, ``extrapolation``, ``all``):
    ``summary.json``, ``scores.json``, ``table.md``, ``forecast_scores.png``, ``observed.json``."""
    path = out / "predictions.json"
    if not path.is_file():
        raise RuntimeError(f"{path} is missing: run --phase predict before the summary")
    preds = json.loads(path.read_text())
    n_eval = int(preds["n_eval"])
    done = [f for f, _ in _folders(cfg, runs, "heldout") if (f / "manifest.json").is_file()]
    if len(done) < len(cfg.jobs("heldout")):
        raise RuntimeError(f"{len(cfg.jobs('heldout')) - len(done)} held-out runs missing")
    archive_runs(runs, out)
    pilots = observe(cfg, runs, "pilots", n_eval)
    held = observe(cfg, runs, "heldout", n_eval)
    write_json(out / "observed.json", {r["name"]: r for r in pilots + held})
    rng = np.random.default_rng(0)
    stored = [_per_run(_decode(d), preds["targets"], held) for d in preds["forecasts"]]
    sig = fb.sigmoid_prefix(held, prefix=cfg.prefix, n_eval=n_eval, draws=cfg.draws, rng=rng)
    design = {"lrs": cfg.lrs, "staleness": cfg.staleness}
    scores, splits = split_scores([*stored, sig], held, pilots, design, n_eval, rng=rng)
    scores["model_seed_spread"] = preds["model_seed_spread"]
    scores["predictions_created"] = preds["created"]
    config = dict(json.loads((out / "config.json").read_text()))
    config["command"] = "python -m paper.forecast_study"
    write_outputs(out, config, scores, [*stored, sig], held, splits=splits)
