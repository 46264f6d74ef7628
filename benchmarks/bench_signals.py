"""Benchmark: the cost of logging the training signals (``signals.jsonl``; issue 69).

One joint 3-agent run (``signals: true``, the default) whose RL steps alternate between
the signals on (the meter's parameter copy and norms at each optimizer step, one no-grad
forward of ``KL_ROWS`` (2) rows per agent for the policy KL, the rows written and flushed) and off
(the meter detached). The signals only observe, so both kinds of step continue one
trajectory on one model, and a load change on a shared machine hits both alike. Prints the
median seconds per RL step of each (wall and process CPU) and their ratio; goal: the signals
cost <= 5 % of a step.

Usage::

    python benchmarks/bench_signals.py                       # tiny preset, CPU
    python benchmarks/bench_signals.py --preset micro --steps 20
    python benchmarks/bench_signals.py --staleness 4 --algo ppo
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from typing import Any

import torch
from _machine import load_average

from llm_runs import BASE_PRESETS, rl_step, setup_training
from llm_runs.config import TrainConfig
from llm_runs.runlog import SignalWriter


def _config(args: argparse.Namespace) -> TrainConfig:
    rl = {"batch": args.batch, "group": args.group, "algo": args.algo, "warmup_steps": 0}
    rl["staleness"] = args.staleness
    model = {"preset": args.preset, "base_cache": args.base_cache}
    return TrainConfig.from_dict(
        {"model": model, "rl": rl, "device": args.device, "threads": args.threads}
    )


def bench(args: argparse.Namespace) -> dict[str, Any]:
    """Median wall and CPU seconds per RL step with the signals on and off (alternating)."""
    st, _ = setup_training(_config(args), progress=False)
    meter = st.meter
    assert meter is not None
    wall: dict[bool, list[float]] = {True: [], False: []}
    cpu: dict[bool, list[float]] = {True: [], False: []}
    with tempfile.TemporaryDirectory() as tmp:
        writer = SignalWriter(tmp)
        for step in range(args.warm + 2 * args.steps):
            on = step % 2 == 0
            st.meter = meter if on else None
            if args.device.startswith("cuda"):
                torch.cuda.synchronize()
            t0, c0 = time.perf_counter(), time.process_time()
            rl_step(st, step, pulse=False, pulse_mode="flip", log_kl=False)
            if on:
                writer.write(meter.rows(step + 1, "rl"))
            if args.device.startswith("cuda"):
                torch.cuda.synchronize()
            if step >= args.warm:
                wall[on].append(time.perf_counter() - t0)
                cpu[on].append(time.process_time() - c0)
        writer.close()
    on_w, off_w = statistics.median(wall[True]), statistics.median(wall[False])
    on_c, off_c = statistics.median(cpu[True]), statistics.median(cpu[False])
    return {
        "preset": args.preset,
        "device": args.device,
        "batch": args.batch,
        "group": args.group,
        "algo": args.algo,
        "staleness": args.staleness,
        "steps": args.steps,
        "s_per_step_on": on_w,
        "s_per_step_off": off_w,
        "ratio": on_w / off_w,
        "cpu_s_per_step_on": on_c,
        "cpu_s_per_step_off": off_c,
        "cpu_ratio": on_c / off_c,
        "load_average": load_average(),
    }


def main() -> None:
    """Parse the flags, run, print the table and a JSON line."""
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--preset", default="tiny", choices=list(BASE_PRESETS))
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--group", type=int, default=1)
    ap.add_argument("--algo", default="reinforce", choices=("reinforce", "grpo", "ppo"))
    ap.add_argument("--staleness", type=int, default=0)
    ap.add_argument("--steps", type=int, default=30, help="timed RL steps of each kind")
    ap.add_argument("--warm", type=int, default=2, help="untimed RL steps first")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--base-cache", help="folder of cached pretrained bases")
    args = ap.parse_args()
    if min(args.batch, args.group, args.steps, args.threads) < 1 or args.warm < 0:
        ap.error("--batch, --group, --steps and --threads must be >= 1, --warm >= 0")
    torch.set_num_threads(args.threads)
    res = bench(args)
    print(
        f"== bench_signals ({res['preset']}, {res['device']}, batch {res['batch']} x group "
        f"{res['group']}, {res['algo']}, staleness {res['staleness']}; load {res['load_average']})"
    )
    print(
        f"signals on : {res['s_per_step_on']:.4f} s/step (CPU {res['cpu_s_per_step_on']:.4f})\n"
        f"signals off: {res['s_per_step_off']:.4f} s/step (CPU {res['cpu_s_per_step_off']:.4f})\n"
        f"ratio on/off: wall {res['ratio']:.3f}x, CPU {res['cpu_ratio']:.3f}x (goal <= 1.05x)"
    )
    print(json.dumps({"signals": res}))


if __name__ == "__main__":
    main()
