"""Benchmark: Pool-of-Agents step time and memory against the pool size K (one run).

For each ``pool.update`` (``grad``, ``es``) and K (``--K``, default 1,2,4,8; ES needs an
even K), a joint 3-role run (``llm_runs`` math task, the same 32 rollouts per step split
among the members) is set up on one shared base, for K > 1 twice: ``per-member`` (one
batch per member, ``pool.batched: false``, the implementation before issue 33) and
``batched`` (all members' rows in one mixed batch, the default). The runs take turns, one
RL step each per round, so that a load change on a shared machine hits every run alike.
Prints per run the median seconds per step, its ratio to single-agent (grad, K = 1)
training and, for ``batched``, to ``per-member`` at the same K; and the memory the pool
adds: exact bytes of adapter parameters, gradients and AdamW state (and the ES centres),
with its ratio to K = 1. One base plus K adapters per role: the base is counted once
whatever K is. Goals: memory grows as the adapters only (K x the adapter bytes, base
shared; issue 20); a grad pool's step at K = 8 within 1.5x of K = 1 at matched rollouts
(issue 33 §5).

Usage: python benchmarks/bench_pool.py [--K 1,2,4,8] [--steps 8] [--preset tiny]
       [--algo grpo] [--batch 8 --group 4] [--cache DIR]

The Pool-of-Agents study on the testbed (``paper/pool_testbed.py``) trains REINFORCE with
32 problems of one rollout: ``--algo reinforce --batch 32 --group 1`` times its steps.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time

import torch
from _machine import load_average


def _bytes(st) -> int:
    """Adapter parameters + gradients + optimizer state (+ ES centres) in bytes."""
    seen: set[int] = set()
    total = 0
    params = [p for ps in st.policy.params.values() for p in ps]
    params += [p for ps in st.pool.centre.values() for p in ps]
    for p in params:
        if id(p) in seen:
            continue
        seen.add(id(p))
        total += p.numel() * p.element_size()
        if p.grad is not None:
            total += p.grad.numel() * p.grad.element_size()
        for v in st.opt.state.get(p, {}).values():
            if torch.is_tensor(v):
                total += v.numel() * v.element_size()
    return total


def main() -> int:
    from llm_runs.config import ALGOS

    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--K", default="1,2,4,8")
    ap.add_argument("--steps", type=int, default=8)
    ap.add_argument("--preset", default="tiny")
    ap.add_argument("--algo", default="grpo", choices=ALGOS)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--group", type=int, default=4)
    ap.add_argument("--cache", default=None)
    a = ap.parse_args()
    torch.set_num_threads(1)
    from llm_runs import rl_step, setup_training
    from llm_runs.config import TrainConfig

    try:
        ks = [int(k) for k in a.K.split(",")]
    except ValueError:
        ks = []
    if not ks or min(ks) < 1 or a.steps < 1:
        print(f"error: --K must be a comma list of ints >= 1 (got {a.K!r}) and --steps >= 1",
              file=sys.stderr)  # fmt: skip
        return 2
    runs = {}
    for update in ("grad", "es"):
        for k in ks:
            if update == "es" and (k < 2 or k % 2):
                continue
            for path in ("per-member", "batched") if k > 1 else ("single",):
                pool = {"update": update, "init_noise": 0.01 if k > 1 else 0.0}
                cfg = TrainConfig.from_dict(
                    {
                        "model": {"preset": a.preset, "base_cache": a.cache},
                        "rl": {"algo": a.algo, "batch": a.batch, "group": a.group},
                        "pool_size": k,
                        "pool": {**pool, "batched": path == "batched"},
                        "threads": 1,
                    }
                )
                st, _ = setup_training(cfg, progress=False)
                rl_step(st, 0, pulse=False, pulse_mode="flip", log_kl=False)  # warm up
                runs[(update, k, path)] = st
    wall: dict[tuple[str, int, str], list[float]] = {r: [] for r in runs}
    for r in range(a.steps):
        for key, st in runs.items():
            t0 = time.perf_counter()
            rl_step(st, 1 + r, pulse=False, pulse_mode="flip", log_kl=False)
            wall[key].append(time.perf_counter() - t0)
    single = ("grad", 1, "single")
    ref_t = statistics.median(wall[single]) if single in wall else None
    ref_m = _bytes(runs[single]) if single in runs else None
    print(f"pool step time and memory, {a.preset} base, {a.algo}, {a.batch * a.group} "
          f"rollouts/step, {a.steps} interleaved steps, load {load_average()}")  # fmt: skip
    print(f"{'update':>6} {'K':>3} {'path':>10} {'s/step':>8} {'x K=1':>7} {'x per-m':>8} "
          f"{'pool bytes':>11} {'x K=1':>7}")  # fmt: skip
    for (update, k, path), st in runs.items():
        t = statistics.median(wall[(update, k, path)])
        m = _bytes(st)
        rt = f"{t / ref_t:7.2f}" if ref_t else "      –"
        old = wall.get((update, k, "per-member"))
        ro = f"{t / statistics.median(old):8.2f}" if path == "batched" and old else "       –"
        rm = f"{m / ref_m:7.2f}" if ref_m else "      –"
        print(f"{update:>6} {k:>3} {path:>10} {t:8.3f} {rt} {ro} {m:>11} {rm}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
