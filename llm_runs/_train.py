"""The run loop: build everything, evaluate/log, train, checkpoint, resume.

Order within a run: for ``step`` in ``[start, steps)``: evaluate and log if ``step %
eval_every == 0``; one training step (supervised while ``step < warmup_steps``, then RL);
checkpoint after the step if ``(step + 1) % ckpt_every == 0``. A final evaluation is
logged at ``step == steps``. A checkpoint taken after step ``s - 1`` resumes at ``s``:
log rows with ``step >= s`` are dropped and regenerated, so no row is lost or duplicated,
and on CPU the resumed log equals the uninterrupted one. The training signals
(``signals.jsonl``, one row per optimizer step and agent, :mod:`llm_runs._signal_meter`) are
appended after every step and fsynced before every checkpoint; a resume drops the rows past
the checkpoint's step, so that file too equals the uninterrupted run's.

Run folders are never destroyed, spliced or shared (see :mod:`llm_runs._runfolder`): a new
run needs an empty folder (or ``overwrite``), a resumed run keeps the config in its manifest,
and a lock file keeps a second writer out.

Divergence: after every training step the adapters' parameters and the step's training
metrics are checked; when one is non-finite (NaN/inf) the run stops there. It logs a last
evaluation at that step (the diverged agents' competence as measured, training metrics that
are not finite as null), marks the manifest ``status: "diverged"`` with ``diverged_step`` and
``diverged_reason``, and returns normally: a diverged run is recorded data, not an error.
"""

from __future__ import annotations

import os
import random
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch

from simulate.common import AgentmotifsError, write_json

from . import runlog
from ._base_model import get_base
from ._edges import EdgeController, in_windows, pulse_windows
from ._policy import MultiAdapter
from ._pool import Pool
from ._rows import log_rows, nonfinite
from ._runfolder import CKPT_FILE, check_device, embed_spec, open_run_folder, same_run
from ._signal_log import SignalWriter
from ._signal_meter import SignalMeter
from ._staleness import AdapterRing
from ._steps import State, evaluate, rl_step, warmup_step
from ._task_registry import get_task
from .config import ConfigError, TrainConfig

__all__ = ["CKPT_FILE", "train"]

PROBE_SEED = 0  # probe/test sets are fixed per task, the same for every run and seed


def _check_pulse_roles(cfg: TrainConfig) -> None:
    """``task.spurious.roles`` must name agents of the network (ConfigError otherwise)."""
    roles = list(cfg.network.network_spec().nodes)
    unknown = [r for r in cfg.task.spurious.roles if r not in roles]
    if unknown:
        raise ConfigError(f"task.spurious.roles: {unknown} are not agents; agents are {roles}")


def _setup(cfg: TrainConfig, progress: bool) -> tuple[State, Any]:
    if cfg.threads is not None:
        torch.set_num_threads(cfg.threads)
    torch.manual_seed(cfg.seed)
    spec = cfg.network.network_spec()
    roles = tuple(spec.nodes)
    try:
        task = get_task(cfg.task.name, roles=roles, **cfg.task.options)
    except AgentmotifsError:
        raise
    except (TypeError, ValueError) as err:
        raise ConfigError(f"task: {err}") from None
    m = cfg.model
    try:
        base = get_base(
            task,
            preset=m.preset,
            arch=m.arch,
            tokenizer=m.tokenizer,
            base=m.base,
            cache=m.base_cache,
            steps=m.pretrain_steps,
            batch=m.pretrain_batch,
            lr=m.pretrain_lr,
            device=cfg.device,
            progress=progress,
        )
    except (OSError, ValueError) as err:  # a missing or unreadable model.base checkpoint
        if m.base is None or isinstance(err, AgentmotifsError):
            raise
        raise ConfigError(f"model.base: cannot load {m.base!r} ({err})") from None
    k = cfg.pool_size
    members = {r: [r] if k == 1 else [f"{r}_{i}" for i in range(k)] for r in roles}
    names = [n for r in roles for n in members[r]]
    lo = cfg.lora
    pol = MultiAdapter(
        base,
        names,
        r=lo.r,
        alpha=lo.alpha,
        dropout=lo.dropout,
        target_modules=lo.target_modules,
        seed=cfg.seed,
        device=cfg.device,
    )
    pool = Pool(cfg, pol, members)
    groups = [{"params": ps, "role": r} for r, ps in pool.trainable()]
    # foreach: a few multi-tensor ops per step instead of several per parameter tensor (K
    # members have K times the tensors); the same numbers as the per-tensor loop
    opt = torch.optim.AdamW(groups, lr=cfg.rl.lr, weight_decay=cfg.rl.weight_decay, foreach=True)
    gen = torch.Generator(device=cfg.device).manual_seed(cfg.seed + 1)
    st = State(
        cfg=cfg,
        task=task,
        policy=pol,
        edges=EdgeController(spec, cfg.network),
        opt=opt,
        rng=np.random.default_rng([cfg.seed, 99]),
        gen=gen,
        members=members,
        pool=pool,
        ring=AdapterRing(cfg.rl.staleness),
        meter=SignalMeter(list(roles)) if cfg.signals else None,
    )
    return st, base


setup_training = _setup  # public name: benchmarks time single steps on it


def _save(st: State, path: Path, next_step: int, extra: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    state = {
        "next_step": next_step,
        "adapters": st.policy.adapter_state(),
        "optimizer": st.opt.state_dict(),
        "rng": {
            "np": st.rng.bit_generator.state,
            "gen": st.gen.get_state(),
            "torch": torch.get_rng_state(),
            "py": random.getstate(),
        },
        "ema": st.edges.state(),
        "baseline": dict(st.baseline),
        "acc": st.acc,
        "acc_e2e": list(st.acc_e2e),
        "ring": st.ring.state(),
        "pool": st.pool.state(),
        **extra,
    }
    tmp = path.with_suffix(f".tmp{os.getpid()}")
    torch.save(state, tmp)
    os.replace(tmp, path)


def _load(st: State, path: Path, run_id: str | None) -> dict[str, Any]:
    state = torch.load(path, map_location=st.policy.device, weights_only=False)
    if run_id is not None and state.get("run_id") not in (None, run_id):
        raise runlog.RunLogError(
            f"{path}: the checkpoint belongs to another run (run_id {state.get('run_id')}, "
            f"manifest {run_id}); refusing to splice two runs"
        )
    st.policy.load_adapter_state(state["adapters"])
    st.opt.load_state_dict(state["optimizer"])
    st.rng.bit_generator.state = state["rng"]["np"]
    st.gen.set_state(state["rng"]["gen"])
    torch.set_rng_state(state["rng"]["torch"])
    random.setstate(state["rng"]["py"])
    st.edges.load_state(state["ema"])
    st.baseline = dict(state["baseline"])
    st.acc = state["acc"]
    st.acc_e2e = list(state["acc_e2e"])
    st.ring.load_state(state.get("ring"))
    st.pool.load_state(state.get("pool"))
    return state


def train(
    cfg: TrainConfig | None,
    out: str | Path,
    *,
    resume: bool = False,
    overwrite: bool = False,
    progress: bool = True,
) -> Path:
    """Run (or resume) joint training and write the run folder.

    Args:
        cfg: The run config. When resuming a run, None means the config in its manifest;
            a config given must describe the same run (only ``threads`` may differ).
        out: Run folder (``manifest.json``, ``competence.jsonl``, ``checkpoints/``,
            ``run.lock``).
        resume: Continue the run in ``out`` as its manifest defines it: from its last
            checkpoint (a manifest without one restarts it at step 0, regenerating its
            rows); a run that finished or diverged is left as it is. A folder with no run
            starts one (so a restarted sweep resumes or starts each of its runs).
        overwrite: Start a new run even if ``out`` holds one (the old folder is replaced as
            a whole). Without it a new run into a non-empty folder is an error.
        progress: Show a tqdm bar with step, rewards and competences.

    Returns:
        The run folder.

    Raises:
        OutputError: ``out`` not writable, in use by another process, or not empty.
        ConfigError: A bad config, a CUDA device that is not there, a config that differs
            from the run being resumed.
        RunLogError: A folder to resume with no manifest, or a checkpoint of another run.
    """
    out = Path(out)
    if cfg is not None:
        check_device(cfg.device)
        cfg = embed_spec(cfg)
        _check_pulse_roles(cfg)
    lock, existing = open_run_folder(out, resume=resume, overwrite=overwrite)
    try:
        manifest = None
        if existing:
            if not (out / runlog.MANIFEST_FILE).exists():
                raise runlog.RunLogError(
                    f"{str(out)!r} holds files but no {runlog.MANIFEST_FILE}: nothing to resume"
                )
            manifest = runlog.read_manifest(out)
            cfg = same_run(TrainConfig.from_dict(manifest["config"]), cfg, out)
            check_device(cfg.device)
            if runlog.is_terminal(manifest.get("status")):
                print(
                    f"note: run {str(out)!r} has {manifest['status']}; nothing to resume",
                    file=sys.stderr,
                )
                return out
        elif cfg is None:
            raise ConfigError(f"nothing to resume in {str(out)!r}, and no config to start a run")
        return _run(cfg, out, manifest, progress)
    finally:
        lock.release()


def _run(cfg: TrainConfig, out: Path, manifest: dict[str, Any] | None, progress: bool) -> Path:
    """The training loop of :func:`train` (the folder is locked and checked)."""
    ckpt = out / CKPT_FILE
    t0 = time.perf_counter()
    st, base = _setup(cfg, progress)
    spec = st.edges.spec
    windows = pulse_windows(cfg.task.spurious, cfg.steps, seed=cfg.seed)
    schedules = {
        "pulses": windows,
        "pulse_mode": cfg.task.spurious.mode,
        "shift_step": cfg.task.shift.step,
    }
    start, resumed = 0, None
    if manifest is not None:
        run_id = manifest.get("run_id")
        if ckpt.exists():
            start = int(_load(st, ckpt, run_id)["next_step"])
        resumed = start
        writer = runlog.RunWriter(out, None, resume_from_step=start)
        if manifest["schema_version"] < 3:  # a log of before the signals gets none
            st.meter = None
    else:
        manifest = runlog.make_manifest(
            run=cfg.name or out.name,
            seed=cfg.seed,
            agents=st.roles,
            spec=spec.to_dict(),
            config=cfg.to_dict(),
            schedules=schedules,
            device=cfg.device,
            extra={
                "base": {"path": str(base.path), **base.meta},
                "members": st.members,
                "lora_target_modules": st.policy.target_modules,
                "warmup_steps": cfg.rl.warmup_steps,
            },
        )
        run_id = manifest["run_id"]
        writer = runlog.RunWriter(out, manifest)
    signals = None if st.meter is None else SignalWriter(out, resume_from_step=resumed)
    task, n_probe, n_test = st.task, cfg.task.n_probe, cfg.task.n_test
    sets = {}
    for shifted in (False, True):
        if shifted and cfg.task.shift.step is None:
            continue
        probes = {r: task.probes(r, n_probe, seed=PROBE_SEED, shifted=shifted) for r in st.roles}
        rng = np.random.default_rng([PROBE_SEED, 2718, int(shifted)])
        sets[shifted] = (probes, task.sample(rng, n_test, split="test", shifted=shifted))
    bar = None
    if progress:
        from tqdm.auto import tqdm

        bar = tqdm(total=cfg.steps, initial=start, desc=out.name, dynamic_ncols=True)
    post: dict[str, str] = {}
    diverged: tuple[int, str] | None = None

    def log_eval(step: int) -> None:
        shifted = cfg.task.shift.step is not None and step >= cfg.task.shift.step
        probes, test = sets[shifted]
        comp, acc, members = evaluate(st, step, probes, test)
        pulse = in_windows(step, windows)
        writer.write(log_rows(st, step, comp, acc, n_probe, n_test, pulse, shifted, members))
        post.update({"e2e": f"{acc:.2f}", **{r: f"{v:.2f}" for r, v in comp.items()}})

    try:
        for step in range(start, cfg.steps + 1):
            if step % cfg.eval_every == 0 or step == cfg.steps:
                log_eval(step)
            if step == cfg.steps:
                break
            pulse = in_windows(step, windows)
            try:
                if step < cfg.rl.warmup_steps:
                    warmup_step(st, step)
                    post["phase"] = "sft"
                else:
                    log_kl = (step + 1) % cfg.eval_every == 0 or step + 1 == cfg.steps
                    mode = cfg.task.spurious.mode
                    rl_step(st, step, pulse=pulse, pulse_mode=mode, log_kl=log_kl)
                    st.pool.maybe_exploit(step, st.opt, st.rng)
                    post["phase"] = "rl"
                    post["R"] = f"{st.acc_e2e[-1]:.2f}"
                why = nonfinite(st)
                if signals is not None and st.meter is not None:
                    phase = "sft" if step < cfg.rl.warmup_steps else "rl"
                    signals.write(st.meter.rows(step + 1, phase))
            except RuntimeError as err:  # sampling from NaN/inf probabilities
                why = nonfinite(st) or (
                    f"{err}".splitlines()[0]
                    if any(w in str(err).lower() for w in ("nan", "inf"))
                    else None
                )
                if why is None:
                    raise
            if why is not None:
                diverged = (step + 1, why)
                try:
                    log_eval(step + 1)  # the diverged state, as measured
                except RuntimeError:
                    pass  # no evaluation possible: the log ends at the last one
                break
            if cfg.ckpt_every and (step + 1) % cfg.ckpt_every == 0 and step + 1 < cfg.steps:
                extra = {"elapsed_s": time.perf_counter() - t0, "run_id": run_id}
                if signals is not None:
                    signals.sync()  # every row the checkpoint has seen is on disk first
                _save(st, ckpt, step + 1, extra)
            if bar is not None:
                bar.update(1)
                bar.set_postfix(post, refresh=False)
    finally:
        writer.close()
        if signals is not None:
            signals.close()
        if bar is not None:
            bar.close()
    if diverged is None:
        runlog.update_manifest(out, status="finished")
    else:
        runlog.update_manifest(
            out, status="diverged", diverged_step=diverged[0], diverged_reason=diverged[1]
        )
    write_json(out / "timing.json", {"seconds": time.perf_counter() - t0, "start_step": start})
    return out
