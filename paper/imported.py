"""Fit and forecast logs in the shapes people already have (issue 70).

Two cases, each written here as the framework writes it, fitted and forecast through the
command line exactly as docs/runlog.md shows it:

- ``grpo``: single-agent GRPO runs (TRL ``trainer_state.json`` with ``training_args.json``)
  whose 0–2 correctness reward is a window mean of 4 × 2 × 1 × 5 = 40 completions, at three
  learning rates; the one-node network (``--motif single``) with the knob's default links
  is fitted to them and forecasts a held-out run at a fourth learning rate.
- ``three_agent``: three-agent runs logged with one metric prefix per agent (``solver/``,
  ``verifier/``, ``judge/``; verl's file-logger JSONL and Hydra config) at three learning
  rates; the feed-forward loop C1 is fitted and forecasts a held-out run.

The logs are synthetic (known curves plus binomial evaluation noise, seeded): what is shown
is that a log of these shapes is read, its meaning, sizes and status recorded, fitted and
forecast, and how the forecast compares with the held-out run's logged values. Only
``config.json``, ``summary.json`` and ``table.md`` are written to ``--out`` (the logs and
fits go to a temporary folder).

    python -m paper.imported [--quick] [--out paper/results/imported]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

OUT = Path(__file__).resolve().parent / "results" / "imported"
GRPO_ARGS = {
    "num_generations": 4,
    "per_device_train_batch_size": 2,
    "gradient_accumulation_steps": 1,
    "logging_steps": 5,
    "seed": 0,
}
GRPO_N = 40  # completions behind one logged window mean
AGENTS = ("solver", "verifier", "judge")
#: The logs' learning speed grows as lr ** RATE_EXPONENT: the truth the fitted link slope
#: ``c[rho[X]~rl.lr]`` (a log link) is compared with.
RATE_EXPONENT = 0.7


def design(quick: bool) -> dict[str, Any]:
    """The frozen design: learning rates (pilots and the held-out one), steps, seeds."""
    return {
        "pilots_lr": [1e-6, 2e-6, 4e-6],
        "heldout_lr": 3e-6,
        "steps": 60 if quick else 150,
        "seed": 0,
        "method": "laplace",
        "quick": quick,
        "truth_rate_exponent": RATE_EXPONENT,
    }


def _grpo_level(lr: float, step: np.ndarray) -> np.ndarray:
    """The success probability of a correctness sample: faster at a larger rate."""
    k = 0.02 * (lr / 1e-6) ** RATE_EXPONENT
    return 0.1 + 0.75 * (1 - np.exp(-k * step))


def write_grpo(folder: Path, lr: float, steps: int, rng: np.random.Generator) -> Path:
    """A TRL GRPO output folder: rewards/correctness_reward/mean on 0–2 every 5 steps."""
    s = np.arange(5, steps + 1, 5)
    p = _grpo_level(lr, s - 2.0)  # a window's middle
    reward = 2.0 * rng.binomial(GRPO_N, p) / GRPO_N
    hist = [
        {
            "loss": 0.0,
            "grad_norm": 0.5,
            "learning_rate": lr,
            "reward": float(r),
            "reward_std": 0.8,
            "rewards/correctness_reward/mean": float(r),
            "rewards/correctness_reward/std": 0.8,
            "kl": 1e-3 * int(t),
            "step": int(t),
        }
        for t, r in zip(s, reward, strict=True)
    ]
    ck = folder / f"checkpoint-{steps}"
    ck.mkdir(parents=True)
    (ck / "trainer_state.json").write_text(json.dumps({"global_step": steps, "log_history": hist}))
    args = {**GRPO_ARGS, "learning_rate": lr, "max_steps": steps}
    (folder / "training_args.json").write_text(json.dumps(args))
    return folder


def _agent_levels(lr: float, step: np.ndarray) -> dict[str, np.ndarray]:
    """A cascade: the verifier learns from the solver's level, the judge from both."""
    k = 0.03 * (lr / 1e-6) ** RATE_EXPONENT
    x = 0.1 + 0.7 * (1 - np.exp(-k * step))
    y = 0.1 + 0.7 * x**2 / (0.25 + x**2) * (1 - np.exp(-0.8 * k * step))
    z = 0.05 + 0.8 * (x * y) ** 2 / (0.1 + (x * y) ** 2) * (1 - np.exp(-0.6 * k * step))
    return {"solver": x, "verifier": y, "judge": z}


def write_three_agent(folder: Path, lr: float, steps: int, rng: np.random.Generator) -> Path:
    """verl's file-logger JSONL of a three-agent run, one prefix per agent, and its config."""
    folder.mkdir(parents=True)
    s = np.arange(0, steps + 1, 10)
    levels = _agent_levels(lr, s.astype(float))
    lines = []
    for i, t in enumerate(s):
        data = {f"{a}/accuracy": float(rng.binomial(64, levels[a][i]) / 64) for a in AGENTS}
        data |= {f"{a}/actor/entropy": 0.5 for a in AGENTS}
        lines.append(json.dumps({"step": int(t), "data": data}))
    (folder / f"{folder.name}.jsonl").write_text("\n".join(lines) + "\n")
    (folder / ".hydra").mkdir()
    (folder / ".hydra" / "config.yaml").write_text(
        f"data:\n  train_batch_size: 16\n  seed: 0\nactor_rollout_ref:\n  rollout:\n    n: 4\n"
        f"  actor:\n    optim:\n      lr: {lr!r}\ntrainer:\n  total_training_steps: {steps}\n"
    )
    return folder / f"{folder.name}.jsonl"


def _calibrate(*argv: str) -> str:
    """``python -m calibrate ARGV`` as a user runs it; its stdout (an error: its stderr)."""
    env = {k: v for k, v in os.environ.items() if k != "JAX_ENABLE_X64"}
    r = subprocess.run(
        [sys.executable, "-m", "calibrate", *argv], capture_output=True, text=True, env=env
    )
    if r.returncode != 0:
        raise SystemExit(f"error: calibrate {argv[0]} failed: {r.stderr.strip()[-600:]}")
    return r.stdout


def _case(
    name: str,
    fit_args: list[str],
    logs: list[Path],
    heldout: Path,
    lr: float,
    lr_key: str,
    work: Path,
    steps: int,
) -> dict[str, Any]:
    """Fit the pilots' logs, forecast the held-out run's setting, compare with its log."""
    fit_dir = work / f"fit-{name}"
    out = _calibrate(
        "fit",
        *map(str, logs),
        *fit_args,
        "--covariate",
        f"rl.lr={lr_key}",
        "--method",
        "laplace",
        "--out",
        str(fit_dir),
        "--no-progress",
    )
    pred = json.loads(
        _calibrate(
            "predict", str(fit_dir), "--set", f"rl.lr={lr!r}", "--steps", str(steps), "--json"
        )
    )
    inputs = json.loads((fit_dir / "inputs.json").read_text())
    summary = json.loads((fit_dir / "summary.json").read_text())
    import calibrate as cal

    held = cal.load_inputs([heldout], mapping=_mapping(fit_args))
    last = held.table.sort_values("step").groupby("agent").last()["competence"]
    forecast = _forecast(pred)
    compare = {
        a: {
            "logged_final": float(last[a]),
            **forecast[a],
            "inside_90": bool(forecast[a]["q05"] <= last[a] <= forecast[a]["q95"]),
        }
        for a in sorted(forecast)
    }
    return {
        "pilots": [str(p.name) for p in logs],
        "heldout": heldout.name,
        "heldout_lr": lr,
        "sources": inputs["sources"],
        "status_counts": inputs["status_counts"],
        "fit": {k: {q: round(v[q], 4) for q in ("mean", "q05", "q95")} for k, v in summary.items()},
        "forecast_vs_heldout": compare,
        "fit_log_head": [ln for ln in out.splitlines() if ln.startswith(("link", "run status"))],
    }


def _mapping(fit_args: list[str]):
    import calibrate as cal

    agents = [fit_args[i + 1] for i, a in enumerate(fit_args) if a == "--agent"]
    regex = [fit_args[i + 1] for i, a in enumerate(fit_args) if a == "--agent-regex"]
    sizes = [fit_args[i + 1] for i, a in enumerate(fit_args) if a == "--n-eval"]
    return cal.KeyMapping.from_options(agents, regex, sizes)


def _forecast(pred: dict[str, Any]) -> dict[str, dict[str, float]]:
    """Per agent, the forecast final competence of one new run: mean and 90 % interval."""
    (setting,) = pred["predictions"]
    return {
        a: {k: float(v["final"][k]) for k in ("mean", "q05", "q95")}
        | {"p_collapse": float(v.get("p_collapse", float("nan")))}
        for a, v in setting["agents"].items()
    }


def _table(summary: dict[str, Any]) -> str:
    rows = [
        "| case | agent | key (meaning) | n_eval from | status | forecast final [90 %] "
        "| held-out logged final | inside |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for case, c in summary["cases"].items():
        src = {s["agent"]: s for s in c["sources"]}
        status = ", ".join(f"{n} {k}" for k, n in c["status_counts"].items())
        for a, f in c["forecast_vs_heldout"].items():
            s = src.get(a, {})
            rows.append(
                f"| {case} | {a} | `{s.get('key')}` ({s.get('meaning')}) | "
                f"{s.get('n_eval_from')} | {status} | {f['mean']:.2f} [{f['q05']:.2f}, "
                f"{f['q95']:.2f}] | {f['logged_final']:.2f} | {'yes' if f['inside_90'] else 'no'} |"
            )
    slope = summary["cases"]["grpo"]["fit"].get("c[rho[X]~rl.lr]")
    if slope is not None:
        truth = summary["design"]["truth_rate_exponent"]
        rows.append(
            f"\ngrpo: fitted link slope c[rho[X]~rl.lr] {slope['mean']:.2f} [{slope['q05']:.2f}, "
            f"{slope['q95']:.2f}] (90 %); the logs' learning speed grows as lr^{truth:g}"
        )
    return "\n".join(rows) + "\n"


def main(argv: list[str] | None = None) -> int:
    """Write the logs, fit and forecast both cases, write config/summary/table."""
    p = argparse.ArgumentParser(prog="python -m paper.imported", description=__doc__)
    p.add_argument("--quick", action="store_true", help="fewer steps (a test's run)")
    p.add_argument("--out", default=str(OUT), help="folder for config/summary/table")
    args = p.parse_args(argv)
    cfg = design(args.quick)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(cfg["seed"])
    steps = cfg["steps"]
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        grpo = [write_grpo(work / f"grpo-lr{lr:g}", lr, steps, rng) for lr in cfg["pilots_lr"]]
        g_held = write_grpo(work / "grpo-heldout", cfg["heldout_lr"], steps, rng)
        three = [
            write_three_agent(work / f"marti-lr{lr:g}", lr, steps, rng) for lr in cfg["pilots_lr"]
        ]
        t_held = write_three_agent(work / "marti-heldout", cfg["heldout_lr"], steps, rng)
        cases = {
            "grpo": _case(
                "grpo",
                ["--agent", "X=rewards/correctness_reward/mean:0:2", "--motif", "single"],
                grpo,
                g_held,
                cfg["heldout_lr"],
                "learning_rate",
                work,
                steps,
            ),
            "three_agent": _case(
                "three",
                [
                    "--agent-regex",
                    r"(?P<agent>\w+)/accuracy:rate",
                    "--agents",
                    ",".join(AGENTS),
                    "--motif",
                    "C1",
                ],
                three,
                t_held,
                cfg["heldout_lr"],
                "actor_rollout_ref.actor.optim.lr",
                work,
                steps,
            ),
        }
    summary = {"design": cfg, "cases": cases}
    (out / "config.json").write_text(json.dumps(cfg, indent=2) + "\n")
    (out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    (out / "table.md").write_text(_table(summary))
    print(_table(summary), end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
