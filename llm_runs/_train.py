"""The run loop: build everything, evaluate/log, train, checkpoint, resume.

Order within a run: for ``step`` in ``[start, steps)``: evaluate and log if ``step %
eval_every == 0``; one training step (supervised while ``step < warmup_steps``, then RL);
checkpoint after the step if ``(step + 1) % ckpt_every == 0``. A final evaluation is
logged at ``step == steps``. A checkpoint taken after step ``s - 1`` resumes at ``s``:
log rows with ``step >= s`` are dropped and regenerated, so no row is lost or duplicated,
and on CPU the resumed log equals the uninterrupted one.
"""

from __future__ import annotations

import os
import random
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch

from . import runlog
from ._base import get_base
from ._edges import EdgeController, in_windows, pulse_windows
from ._policy import MultiAdapter
from ._steps import State, evaluate, metric_rows, rl_step, warmup_step
from ._tasks import get_task
from .config import TrainConfig

__all__ = ["CKPT_FILE", "train"]

CKPT_FILE = "checkpoints/state.pt"
PROBE_SEED = 0  # probe/test sets are fixed per task, the same for every run and seed


def _setup(cfg: TrainConfig, progress: bool) -> tuple[State, Any]:
    if cfg.threads is not None:
        torch.set_num_threads(cfg.threads)
    torch.manual_seed(cfg.seed)
    spec = cfg.network.network_spec()
    roles = tuple(spec.nodes)
    task = get_task(cfg.task.name, roles=roles, **cfg.task.options)
    m = cfg.model
    base = get_base(
        task,
        preset=m.preset,
        base=m.base,
        cache=m.base_cache,
        steps=m.pretrain_steps,
        batch=m.pretrain_batch,
        lr=m.pretrain_lr,
        device=cfg.device,
        progress=progress,
    )
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
    groups = [{"params": pol.params[n], "role": r} for r in roles for n in members[r]]
    opt = torch.optim.AdamW(groups, lr=cfg.rl.lr, weight_decay=0.0)
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
    )
    return st, base


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
        **extra,
    }
    tmp = path.with_suffix(f".tmp{os.getpid()}")
    torch.save(state, tmp)
    os.replace(tmp, path)


def _load(st: State, path: Path) -> dict[str, Any]:
    state = torch.load(path, map_location=st.policy.device, weights_only=False)
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
    return state


def _rows(
    st: State,
    step: int,
    comp: dict[str, float],
    acc: float,
    n_probe: int,
    n_test: int,
    pulse: bool,
    shifted: bool,
    members: dict[str, list[float]],
) -> list[dict[str, Any]]:
    metrics = metric_rows(st)
    reg = st.edges.regulation()
    rows: list[dict[str, Any]] = []
    for role in st.roles:
        m = metrics.get(role, {})
        row = {
            "kind": "agent",
            "step": step,
            "agent": role,
            "competence": comp[role],
            "n_eval": n_probe,
            **{
                k: m.get(k)
                for k in ("reward", "reward_std", "entropy", "kl", "lr", "budget_share", "loss")
            },
            "ema": st.edges.ema[role],
            "regulation": reg[role],
        }
        if len(st.members[role]) > 1:
            row["members"] = members[role]
        rows.append(row)
    e2e_reward = float(np.mean(st.acc_e2e)) if st.acc_e2e else None
    st.acc_e2e = []
    rows.append(
        {
            "kind": "e2e",
            "step": step,
            "accuracy": acc,
            "n_eval": n_test,
            "reward": e2e_reward,
            "pulse": pulse,
            "shifted": shifted,
        }
    )
    return rows


def train(
    cfg: TrainConfig, out: str | Path, *, resume: bool = False, progress: bool = True
) -> Path:
    """Run (or resume) joint training and write the run folder.

    Args:
        cfg: The run config. When resuming, the config stored in the run's manifest is
            used (``cfg`` must then describe the same run; its ``steps`` may be larger).
        out: Run folder (``manifest.json``, ``competence.jsonl``, ``checkpoints/``).
        resume: Continue from ``out/checkpoints/state.pt`` if present.
        progress: Show a tqdm bar with step, rewards and competences.

    Returns:
        The run folder.
    """
    out = Path(out)
    ckpt = out / CKPT_FILE
    start = 0
    if resume and ckpt.exists() and (out / runlog.MANIFEST_FILE).exists():
        stored = TrainConfig.from_dict(runlog.read_manifest(out)["config"])
        stored.steps = max(stored.steps, cfg.steps)
        cfg = stored
    t0 = time.perf_counter()
    st, base = _setup(cfg, progress)
    spec = st.edges.spec
    windows = pulse_windows(cfg.task.spurious, cfg.steps, seed=cfg.seed)
    schedules = {
        "pulses": windows,
        "pulse_mode": cfg.task.spurious.mode,
        "shift_step": cfg.task.shift.step,
    }
    if resume and ckpt.exists():
        start = int(_load(st, ckpt)["next_step"])
        writer = runlog.RunWriter(out, None, resume_from_step=start)
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
                "warmup_steps": cfg.rl.warmup_steps,
            },
        )
        writer = runlog.RunWriter(out, manifest)
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
    try:
        for step in range(start, cfg.steps + 1):
            shifted = cfg.task.shift.step is not None and step >= cfg.task.shift.step
            pulse = in_windows(step, windows)
            if step % cfg.eval_every == 0 or step == cfg.steps:
                probes, test = sets[shifted]
                comp, acc, members = evaluate(st, step, probes, test)
                writer.write(_rows(st, step, comp, acc, n_probe, n_test, pulse, shifted, members))
                post = {"e2e": f"{acc:.2f}", **{r: f"{v:.2f}" for r, v in comp.items()}}
            if step == cfg.steps:
                break
            if step < cfg.rl.warmup_steps:
                warmup_step(st, step)
                post["phase"] = "sft"
            else:
                log_kl = (step + 1) % cfg.eval_every == 0 or step + 1 == cfg.steps
                rl_step(st, step, pulse=pulse, pulse_mode=cfg.task.spurious.mode, log_kl=log_kl)
                post["phase"] = "rl"
                post["R"] = f"{st.acc_e2e[-1]:.2f}"
            if cfg.ckpt_every and (step + 1) % cfg.ckpt_every == 0 and step + 1 < cfg.steps:
                _save(st, ckpt, step + 1, {"elapsed_s": time.perf_counter() - t0})
            if bar is not None:
                bar.update(1)
                bar.set_postfix(post, refresh=False)
    finally:
        writer.close()
        if bar is not None:
            bar.close()
    (out / "timing.json").write_text(
        f'{{"seconds": {time.perf_counter() - t0:.2f}, "start_step": {start}}}\n'
    )
    return out
