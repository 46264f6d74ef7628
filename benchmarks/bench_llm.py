"""Benchmark of llm_runs' multi-adapter training (prints baselines and ratios in one run).

1. Training throughput (tokens/s): a joint 3-agent step (three LoRA adapters on one base,
   forward + backward per agent, one optimizer step) vs a single-adapter peft step on the
   same base over the same number of tokens. Goal: joint overhead <= 1.3x.
2. Generation throughput (new tokens/s) of the KV-cached sampler, one adapter.
3. Memory of K = 1, 4, 8 adapters on one base vs K separate model copies (each with its
   adapter): bytes of parameters + gradients + AdamW state after one training step
   (exact tensor accounting), and on CUDA the peak allocated memory.
4. ``--staleness 0,4,16`` (instead of 1-3): RL steps/s of a real joint training step
   (``llm_runs`` math task, 3 agents) with policy lag k, the step time's ratio to k = 0
   (goal <= 1.1x; wall and process CPU time, the runs taking turns step by step) and the
   ring's extra memory (k snapshots of the adapters' parameters).

Usage::

    python benchmarks/bench_llm.py                      # tiny preset on CPU
    python benchmarks/bench_llm.py --device cuda --preset small --batch 128
    python benchmarks/bench_llm.py --staleness 0,4,16 --preset micro   # policy-lag cost
    python benchmarks/bench_llm.py --peer trl --steps 40 --batch 8 --group 4
    python benchmarks/bench_llm.py --tasks math-v1,math --preset micro  # testbed step cost

6. ``--tasks math-v1,math`` (instead of 1-3): RL step time of the default config on each
   task (the first testbed's against today's), taking turns; goal <= 1.2x.

5. ``--peer trl`` (instead of 1-3): the 3-role pipeline's per-role GRPO updates by TRL
   (one ``GRPOTrainer`` per role, each a peft LoRA adapter on its own copy of the same
   cached base; benchmarks/_peer_trl.py) and by llm_runs' joint trainer (three adapters on
   one base, ``rl.algo grpo``): the same batch (``--batch`` prompts x ``--group``
   samples per role), learning rate, LoRA rank and steps. The phases take turns (llm_runs'
   first half, TRL's three trainers, llm_runs' second half) in one process at 1 torch
   thread. Prints seconds per 3-role step, tokens/s, memory (exact bytes of parameters,
   gradients and optimizer state; and the process's resident-memory growth while each side
   was built and trained), each role's probe competence before and after, and the ratios.
   Without TRL installed it prints one line and exits 0.
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import statistics
import time
from typing import Any

import torch
from _machine import load_average

from llm_runs import BASE_PRESETS, Base, CharTokenizer, MultiAdapter, build_model

PROMPT_LEN, COMP_LEN = 20, 3


def _base(preset: str, device: str) -> Base:
    tok = CharTokenizer()
    model = build_model(preset, tok.vocab_size).to(device).eval()
    for p in model.parameters():
        p.requires_grad_(False)
    return Base(model, tok, path=None, meta={"preset": preset})


def _data(pol: MultiAdapter, batch: int, device: str) -> tuple[Any, torch.Tensor]:
    g = torch.Generator().manual_seed(0)
    chars = "0123456789+-|>"
    prompts = [
        "".join(chars[int(i)] for i in torch.randint(len(chars), (PROMPT_LEN,), generator=g))
        for _ in range(batch)
    ]
    comp = torch.randint(3, pol.tok.vocab_size, (batch, COMP_LEN), generator=g).to(device)
    return pol.encode(prompts), comp


def _sync(device: str) -> None:
    if device.startswith("cuda"):
        torch.cuda.synchronize()


def _time(fn: Any, steps: int, device: str) -> float:
    fn()  # warm-up
    _sync(device)
    t0 = time.perf_counter()
    for _ in range(steps):
        fn()
    _sync(device)
    return (time.perf_counter() - t0) / steps


def bench_train(preset: str, device: str, batch: int, steps: int) -> dict[str, float]:
    """Tokens/s of the joint 3-agent step vs the single-adapter step (same tokens)."""
    agents = ["X", "Y", "Z"]
    joint = MultiAdapter(_base(preset, device), agents, seed=0, device=device)
    enc, comp = _data(joint, batch, device)
    opt = torch.optim.AdamW([p for a in agents for p in joint.params[a]], lr=1e-3)

    def joint_step() -> None:
        for a in agents:
            joint.activate(a)
            logp, _, _ = joint.token_logprobs(enc, comp)
            joint.backward(a, -logp.mean())
        opt.step()
        opt.zero_grad(set_to_none=True)

    single = MultiAdapter(_base(preset, device), ["S"], seed=0, device=device)
    enc3, comp3 = _data(single, 3 * batch, device)
    opt1 = torch.optim.AdamW(single.params["S"], lr=1e-3)

    def single_step() -> None:
        single.activate("S")
        logp, _, _ = single.token_logprobs(enc3, comp3)
        single.backward("S", -logp.mean())
        opt1.step()
        opt1.zero_grad(set_to_none=True)

    tokens = 3 * batch * (PROMPT_LEN + 1 + COMP_LEN)
    t_joint = _time(joint_step, steps, device)
    t_single = _time(single_step, steps, device)
    return {
        "joint_tokens_per_s": tokens / t_joint,
        "single_tokens_per_s": tokens / t_single,
        "joint_overhead": t_joint / t_single,
    }


def bench_generate(preset: str, device: str, batch: int, steps: int) -> dict[str, float]:
    """New tokens/s of greedy and sampled generation (KV cache), one adapter."""
    pol = MultiAdapter(_base(preset, device), ["X"], seed=0, device=device)
    enc, _ = _data(pol, batch, device)
    n_new = 8
    g = torch.Generator(device=device).manual_seed(0)
    t_greedy = _time(lambda: pol.generate("X", enc, n_new), steps, device)
    t_sample = _time(
        lambda: pol.generate("X", enc, n_new, greedy=False, generator=g), steps, device
    )
    return {
        "greedy_new_tokens_per_s": batch * n_new / t_greedy,
        "sampled_new_tokens_per_s": batch * n_new / t_sample,
    }


def _tensor_bytes(params: list[torch.nn.Parameter], opt: torch.optim.Optimizer) -> int:
    n = sum(p.numel() * p.element_size() for p in params)
    n += sum(p.grad.numel() * p.grad.element_size() for p in params if p.grad is not None)
    for state in opt.state.values():
        n += sum(v.numel() * v.element_size() for v in state.values() if torch.is_tensor(v))
    return n


def bench_memory(preset: str, device: str, batch: int) -> list[dict[str, float]]:
    """Memory of K adapters on one base vs K model copies, after one training step."""
    rows = []
    for k in (1, 4, 8):
        for mode in ("shared", "copies"):
            if device.startswith("cuda"):
                torch.cuda.empty_cache()
                torch.cuda.reset_peak_memory_stats()
            names = [f"A{i}" for i in range(k)]
            if mode == "shared":
                pols = [MultiAdapter(_base(preset, device), names, r=8, seed=0, device=device)]
                owners = [(pols[0], n) for n in names]
            else:
                proto = _base(preset, device)
                pols = [
                    MultiAdapter(copy.deepcopy(proto), [n], r=8, seed=0, device=device)
                    for n in names
                ]
                owners = [(p, n) for p, n in zip(pols, names, strict=True)]
            params = list({id(p): p for pol in pols for p in pol.model.parameters()}.values())
            trainable = [p for pol, n in owners for p in pol.params[n]]
            opt = torch.optim.AdamW(trainable, lr=1e-3)
            enc, comp = _data(pols[0], batch, device)
            for pol, n in owners:
                pol.activate(n)
                logp, _, _ = pol.token_logprobs(enc, comp)
                pol.backward(n, -logp.mean())
            opt.step()
            row = {"K": k, "mode": mode, "tensor_MB": _tensor_bytes(params, opt) / 2**20}
            if device.startswith("cuda"):
                row["peak_MB"] = torch.cuda.max_memory_allocated() / 2**20
            rows.append(row)
            del pols, owners, opt, params, trainable
    return rows


def _rl_turns(
    cfgs: dict[Any, dict[str, Any]], steps: int, device: str, warm: dict[Any, int]
) -> dict[Any, tuple[Any, float, float]]:
    """Set up one joint run per config, ``warm[label]`` RL steps each first, then the runs
    take turns, one RL step each per round for ``steps`` rounds, so that a load change on a
    shared machine hits every run alike. Per label: the state, the median wall and
    process-CPU seconds of its steps."""
    from llm_runs import rl_step, setup_training
    from llm_runs.config import TrainConfig

    runs = {}
    for label, d in cfgs.items():
        st, _ = setup_training(TrainConfig.from_dict(d), progress=False)
        for s in range(warm[label]):
            rl_step(st, s, pulse=False, pulse_mode="flip", log_kl=False)
        runs[label] = st
    wall: dict[Any, list[float]] = {k: [] for k in cfgs}
    cpu: dict[Any, list[float]] = {k: [] for k in cfgs}
    for r in range(steps):
        for label, st in runs.items():
            _sync(device)
            t0, c0 = time.perf_counter(), time.process_time()
            rl_step(st, warm[label] + r, pulse=False, pulse_mode="flip", log_kl=False)
            _sync(device)
            wall[label].append(time.perf_counter() - t0)
            cpu[label].append(time.process_time() - c0)
    return {k: (runs[k], statistics.median(wall[k]), statistics.median(cpu[k])) for k in cfgs}


def _rl_config(preset: str, device: str, batch: int, cache: str | None, **kw: Any) -> dict:
    rl = {"batch": batch, "warmup_steps": 0, "staleness": kw.pop("staleness", 0)}
    return {"model": {"preset": preset, "base_cache": cache}, "rl": rl, "device": device,
            "threads": torch.get_num_threads(), **kw}  # fmt: skip


def bench_staleness(
    ks: list[int], preset: str, device: str, batch: int, steps: int, cache: str | None
) -> list[dict[str, float]]:
    """Seconds per RL step of the joint 3-agent run with policy lag ``k``, ring memory
    (the runs take turns, see :func:`_rl_turns`; each ring is filled first)."""
    cfgs = {k: _rl_config(preset, device, batch, cache, staleness=k) for k in ks}
    got = _rl_turns(cfgs, steps, device, {k: k + 1 for k in ks})
    rows = []
    for k in ks:
        st, wall, cpu = got[k]
        adapter = sum(p.numel() * p.element_size() for ps in st.policy.params.values() for p in ps)
        rows.append(
            {
                "k": k,
                "s_per_step": wall,
                "cpu_s_per_step": cpu,
                "ring_bytes": st.ring.n_bytes(),
                "adapter_bytes": adapter,
            }
        )
    return rows


def bench_tasks(
    tasks: list[str], preset: str, device: str, batch: int, steps: int, cache: str | None
) -> list[dict[str, Any]]:
    """Seconds per RL step of the default joint run on each task (e.g. the first testbed's
    ``math-v1`` against today's ``math``), taking turns; the ratio to the first task."""
    cfgs = {t: _rl_config(preset, device, batch, cache, task={"name": t}) for t in tasks}
    got = _rl_turns(cfgs, steps, device, dict.fromkeys(tasks, 1))
    ref_wall, ref_cpu = got[tasks[0]][1], got[tasks[0]][2]
    return [{"task": t, "s_per_step": got[t][1], "cpu_s_per_step": got[t][2],
             "ratio": got[t][1] / ref_wall, "cpu_ratio": got[t][2] / ref_cpu}
            for t in tasks]  # fmt: skip


def _print_staleness(rows: list[dict[str, float]]) -> None:
    ref = next((r for r in rows if r["k"] == 0), rows[0])
    t0, c0 = ref["s_per_step"], ref["cpu_s_per_step"]
    for r in rows:
        print(
            f"staleness k={int(r['k']):3d}: {1 / r['s_per_step']:7.2f} steps/s | step time "
            f"{r['s_per_step'] / t0:.2f}x k=0 (goal <= 1.10x), CPU time "
            f"{r['cpu_s_per_step'] / c0:.2f}x | ring {r['ring_bytes'] / 2**20:.3f}"
            f" MB = {r['ring_bytes'] / r['adapter_bytes']:.0f} x adapters "
            f"({r['adapter_bytes'] / 2**20:.3f} MB)"
        )


def _rss_mb() -> float:
    """Resident memory of this process (MB), from /proc (NaN where unavailable)."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20
    except (OSError, ValueError, IndexError):
        return float("nan")


def bench_trl(
    preset: str,
    batch: int,
    group: int,
    steps: int,
    cache: str | None,
    lr: float = 1e-3,
    seed: int = 0,
) -> dict[str, Any]:
    """llm_runs' joint GRPO steps vs one TRL GRPOTrainer per role (see module docstring)."""
    import tempfile

    import _peer_trl as pt
    import numpy as np

    from llm_runs import rl_step, setup_training
    from llm_runs._steps import evaluate
    from llm_runs.config import TrainConfig

    cfg = TrainConfig.from_dict(
        {
            "model": {"preset": preset, "base_cache": cache},
            "rl": {"batch": batch, "group": group, "algo": "grpo", "warmup_steps": 0, "lr": lr},
            "threads": torch.get_num_threads(),
            "seed": seed,
        }
    )
    import peft  # noqa: F401  (imports first: the memory growths below are the sides' own)
    import trl  # noqa: F401

    rss0 = _rss_mb()
    st, base = setup_training(cfg, progress=False)
    task, roles = st.task, st.roles
    probes = {r: task.probes(r, 100, seed=0) for r in roles}
    test = task.sample(np.random.default_rng([0, 5]), 50, split="test")
    before, _, _ = evaluate(st, 0, probes, test)
    rss_llm = _rss_mb() - rss0
    # tokens a 3-role step processes: batch x group rollouts x ([bos] + prompt + output)
    p0 = task.sample(np.random.default_rng(0), 1)[0]
    tokens = sum(
        batch * group * (2 + len(task.prompt(r, p0, task.gold_upstream(r, p0))) + task.out_len[r])
        - batch * group
        for r in roles
    )
    wall: dict[str, list[float]] = {"llm_runs": [], **{r: [] for r in roles}}
    loads = []

    def llm_steps(lo: int, hi: int) -> None:
        for s in range(lo, hi):
            t0 = time.perf_counter()
            rl_step(st, s, pulse=False, pulse_mode="flip", log_kl=False)
            wall["llm_runs"].append(time.perf_counter() - t0)
        loads.append(load_average())

    half = steps // 2
    llm_steps(0, half)
    llm_bytes = _trl_free_bytes(st)
    hf_tok = pt.hf_tokenizer(base.tokenizer)
    after_trl, trl_bytes = {}, 0
    rss1 = _rss_mb()
    with tempfile.TemporaryDirectory() as tmp:
        for i, r in enumerate(roles):
            trainer, timer = pt.make_trainer(
                base.model,
                hf_tok,
                task,
                r,
                steps=steps,
                prompts_per_step=batch,
                group=group,
                lr=lr,
                r=cfg.lora.r,
                alpha=cfg.lora.alpha,
                seed=cfg.seed + i,
                out_dir=f"{tmp}/{r}",
            )
            trainer.train()
            wall[r] = timer.times
            after_trl[r] = pt.probe_competence(trainer.model, hf_tok, task, probes[r])
            trl_bytes += pt.trainable_bytes(trainer.model, trainer.optimizer)
            loads.append(load_average())
    rss_trl = _rss_mb() - rss1
    llm_steps(half, steps)
    after_llm, _, _ = evaluate(st, steps, probes, test)
    # the first step of each side compiles nothing but warms caches: medians
    t_llm = statistics.median(wall["llm_runs"])
    t_trl = sum(statistics.median(wall[r]) for r in roles)
    return {
        "steps": steps,
        "seed": seed,
        "batch": batch,
        "group": group,
        "tokens_per_step": tokens,
        "llm_runs_s_per_step": t_llm,
        "trl_s_per_step": t_trl,
        "trl_role_s_per_step": {r: statistics.median(wall[r]) for r in roles},
        "llm_runs_tokens_per_s": tokens / t_llm,
        "trl_tokens_per_s": tokens / t_trl,
        "llm_runs_tensor_MB": llm_bytes / 2**20,
        "trl_tensor_MB": trl_bytes / 2**20,
        "llm_runs_rss_growth_MB": rss_llm,
        "trl_rss_growth_MB": rss_trl,
        "probe_before": before,
        "probe_after_llm_runs": after_llm,
        "probe_after_trl": after_trl,
        "loads": loads,
    }


def _trl_free_bytes(st: Any) -> int:
    """Bytes of llm_runs' model (one base, all adapters), gradients and optimizer state."""
    import _peer_trl as pt

    return pt.trainable_bytes(st.policy.model, st.opt)


def _print_trl(r: dict[str, Any]) -> None:
    roles = list(r["probe_before"])
    print(
        f"== bench_llm --peer trl: 3 roles x {r['batch']} prompts x {r['group']} samples per "
        f"step, {r['steps']} steps, seed {r['seed']}, 1 torch thread"
    )
    print(
        f"{'':<22}{'s/step':>8}{'tokens/s':>10}{'tensor MB':>11}{'RSS growth MB':>15}  "
        + "  ".join(f"probe {x} before->after" for x in roles)
    )
    for side, key in (("llm_runs (joint)", "llm_runs"), ("TRL (3 GRPOTrainers)", "trl")):
        after = r[f"probe_after_{key}"]
        print(
            f"{side:<22}{r[f'{key}_s_per_step']:>8.3f}{r[f'{key}_tokens_per_s']:>10.0f}"
            f"{r[f'{key}_tensor_MB']:>11.2f}{r[f'{key}_rss_growth_MB']:>15.0f}  "
            + "  ".join(f"{r['probe_before'][x]:>11.2f} -> {after[x]:.2f}" for x in roles)
        )
    print(
        f"ratio llm_runs/TRL: throughput {r['trl_s_per_step'] / r['llm_runs_s_per_step']:.2f}x "
        f"(goal >= 1.0x), tensor memory {r['llm_runs_tensor_MB'] / r['trl_tensor_MB']:.2f}x "
        f"(goal <= 1.0x); TRL per role s/step "
        + ", ".join(f"{k} {v:.3f}" for k, v in r["trl_role_s_per_step"].items())
    )
    print(f"load average after each phase: {' | '.join(r['loads'])}")


def main() -> None:
    """Run all three benchmarks and print a table plus a JSON line."""
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--preset", default="tiny", choices=list(BASE_PRESETS))
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument(
        "--threads",
        type=int,
        default=1,
        help="torch CPU threads (1: on a loaded 2-core machine 2 threads ran 4x slower)",
    )
    ap.add_argument(
        "--staleness",
        help="comma-separated policy lags k (e.g. 0,4,16): time real RL steps with each "
        "instead of benchmarks 1-3 (the base is pretrained into --base-cache if missing)",
    )
    ap.add_argument(
        "--tasks",
        help="comma-separated tasks (e.g. math-v1,math): time real RL steps of the default "
        "config on each instead of benchmarks 1-3; ratios to the first (goal <= 1.2x)",
    )
    ap.add_argument("--base-cache", help="folder of cached pretrained bases")
    ap.add_argument(
        "--peer",
        choices=("trl",),
        help="compare llm_runs' joint RL steps with a peer trainer (trl: one TRL "
        "GRPOTrainer per role) instead of benchmarks 1-3",
    )
    ap.add_argument("--group", type=int, default=4, help="--peer: samples per prompt")
    ap.add_argument("--seed", type=int, default=0, help="--peer: training seed of both sides")
    args = ap.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    if args.peer == "trl":
        import importlib.util

        if importlib.util.find_spec("trl") is None:
            print("bench_llm --peer trl: TRL is not installed; skipped (pip install -e '.[bench]')")
            return
        if args.batch < 1 or args.group < 2 or args.steps < 2:
            ap.error("--peer trl needs --batch >= 1, --group >= 2 (GRPO) and --steps >= 2")
        res = bench_trl(
            args.preset, args.batch, args.group, args.steps, args.base_cache, seed=args.seed
        )
        _print_trl(res)
        print(json.dumps({"peer_trl": res}))
        return
    if args.staleness:
        try:
            ks = [int(v) for v in args.staleness.split(",")]
        except ValueError:
            ap.error(f"--staleness: comma-separated ints, got {args.staleness!r}")
        if not ks or min(ks) < 0:
            ap.error("--staleness: lags must be ints >= 0")
        rows = bench_staleness(
            ks, args.preset, args.device, args.batch, args.steps, args.base_cache
        )
        print(f"== bench_llm staleness ({args.preset}, {args.device}, batch {args.batch})")
        _print_staleness(rows)
        print(json.dumps({"staleness": rows}))
        return
    if args.tasks:
        rows = bench_tasks(
            args.tasks.split(","), args.preset, args.device, args.batch, args.steps,
            args.base_cache,
        )  # fmt: skip
        print(f"== bench_llm tasks ({args.preset}, {args.device}, batch {args.batch}, "
              f"load {load_average()})")  # fmt: skip
        for r in rows:
            print(f"task {r['task']:>8}: {r['s_per_step'] * 1e3:7.1f} ms/step | "
                  f"{r['ratio']:.2f}x {rows[0]['task']} (goal <= 1.20x), CPU time "
                  f"{r['cpu_ratio']:.2f}x")  # fmt: skip
        print(json.dumps({"tasks": rows}))
        return
    tr = bench_train(args.preset, args.device, args.batch, args.steps)
    print(f"== bench_llm ({args.preset}, {args.device}, batch {args.batch} per agent)")
    print(
        f"train  single-adapter baseline {tr['single_tokens_per_s']:10.0f} tok/s | "
        f"joint 3-agent {tr['joint_tokens_per_s']:10.0f} tok/s | "
        f"overhead {tr['joint_overhead']:.2f}x (goal <= 1.30x)"
    )
    ge = bench_generate(args.preset, args.device, args.batch, args.steps)
    print(
        f"generate  greedy {ge['greedy_new_tokens_per_s']:10.0f} new tok/s | "
        f"sampled {ge['sampled_new_tokens_per_s']:10.0f} new tok/s"
    )
    mem = bench_memory(args.preset, args.device, args.batch)
    for k in (1, 4, 8):
        sh = next(r for r in mem if r["K"] == k and r["mode"] == "shared")
        cp = next(r for r in mem if r["K"] == k and r["mode"] == "copies")
        extra = ""
        if "peak_MB" in sh:
            extra = f" | peak {sh['peak_MB']:.1f} vs {cp['peak_MB']:.1f} MB"
        print(
            f"memory K={k}: one base {sh['tensor_MB']:8.2f} MB | {k} copies "
            f"{cp['tensor_MB']:8.2f} MB | ratio {cp['tensor_MB'] / sh['tensor_MB']:.2f}x{extra}"
        )
    print(json.dumps({"train": tr, "generate": ge, "memory": mem}))


if __name__ == "__main__":
    main()
