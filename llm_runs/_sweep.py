"""Sweeps over seeds x hyperparameters: local process pool or Ray tasks."""

from __future__ import annotations

import multiprocessing as mp
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

from simulate.common import write_json

from .config import SweepConfig, TrainConfig
from .runlog import RunLogError, is_terminal, read_run

__all__ = ["run_one", "run_sweep"]


def run_one(cfg_dict: dict[str, Any], out: str, resume: bool = True) -> dict[str, Any]:
    """Train one run (in a worker); returns ``{"name", "out", "ok", "error"}``."""
    from ._train import train

    cfg = TrainConfig.from_dict(cfg_dict)
    try:
        log = read_run(out)
        done = is_terminal(log.status) or log.e2e_rows[-1]["step"] >= cfg.steps
    except (RunLogError, IndexError):
        done = False
    if done:  # finished (or diverged) in an earlier attempt of the sweep
        return {"name": cfg.name, "out": out, "ok": True, "error": None}
    try:
        train(cfg, out, resume=resume, progress=False)
        return {"name": cfg.name, "out": out, "ok": True, "error": None}
    except Exception as err:  # reported in the sweep summary, not fatal to other runs
        return {"name": cfg.name, "out": out, "ok": False, "error": f"{type(err).__name__}: {err}"}


def run_sweep(sweep: SweepConfig, *, progress: bool = True) -> list[dict[str, Any]]:
    """Run every (grid point, seed) of ``sweep`` into ``sweep.out/<name>``.

    Backends: ``local`` — a spawn-context process pool of ``sweep.workers`` processes;
    ``ray`` — one Ray task per run with ``num_cpus=cpus_per_run``, ``num_gpus=gpus_per_run``
    (``ray.init(address=sweep.address)``, or a local instance when None). Runs resume
    from their checkpoints if the sweep is restarted. Writes ``sweep.out/sweep.json``.

    Returns:
        One result dict per run (see :func:`run_one`).
    """
    out = Path(sweep.out)
    out.mkdir(parents=True, exist_ok=True)
    jobs = [(c.to_dict(), str(out / str(c.name))) for c in sweep.configs()]
    results: list[dict[str, Any]] = []
    bar = None
    if progress:
        from tqdm.auto import tqdm

        bar = tqdm(total=len(jobs), desc="sweep")
    if sweep.backend == "local":
        ctx = mp.get_context("spawn")
        with ProcessPoolExecutor(max_workers=sweep.workers, mp_context=ctx) as pool:
            futures = [pool.submit(run_one, d, o) for d, o in jobs]
            for f in futures:
                results.append(f.result())
                if bar is not None:
                    bar.update(1)
    else:
        import ray

        started = False
        if not ray.is_initialized():
            kwargs: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False}
            if sweep.address is None:
                kwargs["num_cpus"] = max(1, sweep.workers)
            ray.init(address=sweep.address, **kwargs)
            started = True
        try:
            remote = ray.remote(num_cpus=sweep.cpus_per_run, num_gpus=sweep.gpus_per_run)(run_one)
            refs = [remote.remote(d, o) for d, o in jobs]
            pending = list(refs)
            while pending:
                done, pending = ray.wait(pending, num_returns=1)
                if bar is not None:
                    bar.update(len(done))
            results = ray.get(refs)
        finally:
            if started:
                ray.shutdown()
    if bar is not None:
        bar.close()
    write_json(out / "sweep.json", {"sweep": sweep.to_dict(), "results": results})
    return results
