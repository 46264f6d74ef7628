"""Training logs in the exact shapes frameworks write them (issue 70 §5), written by tests.

Every value is a known function of the step, so a test checks what an importer read against
the function (the oracle), not against a stored result. No third-party file is committed.

- :func:`trl_grpo`: a current TRL ``GRPOTrainer`` output folder (``checkpoint-N/
  trainer_state.json`` with cumulative ``log_history``, ``training_args.json``): a
  correctness reward on 0–2 (``rewards/correctness_reward/mean`` and ``/std``), the sum
  ``reward``/``reward_std``, ``kl``, ``entropy``, ``grad_norm``, ``completions/mean_length``,
  ``frac_reward_zero_std``, ``loss``, ``learning_rate``; ``old=True`` writes older TRL's
  names (``rewards/<fn>`` without ``/mean``, ``completion_length``) and no arguments.
- :func:`verl_jsonl`: verl's file logger (``{"step": N, "data": {...}}``) with
  ``val-core/openai/gsm8k/acc/mean@1``, a string field, nulls for a non-finite loss, per-sample
  scores as a list, and the Hydra ``.hydra/config.yaml``.
- :func:`prefix_csv`: a multi-agent log with one metric prefix per agent (as MARTI logs to
  W&B), exported as a W&B history CSV.
- :func:`mlflow_run`, :func:`tensorboard_run`: the same accuracy curve in MLflow's file
  store and in TensorBoard event files.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

#: GRPO arguments: 4 generations x 2 per device x 1 accumulation x 5 logging steps = 40.
TRL_ARGS = {
    "num_generations": 4,
    "per_device_train_batch_size": 2,
    "gradient_accumulation_steps": 1,
    "logging_steps": 5,
    "max_steps": 100,
    "learning_rate": 1e-6,
    "seed": 42,
}
TRL_N_EVAL = 40


def correctness(step: int) -> float:
    """The 0–2 correctness reward's logged mean at a step (0.2 → 1.9)."""
    return 0.2 + 1.7 * (1 - np.exp(-step / 30))


def accuracy(step: int) -> float:
    """A success rate's logged value at a step (0.1 → 0.85)."""
    return 0.1 + 0.75 * (1 - np.exp(-step / 25))


def trl_entry(step: int, *, old: bool = False, lr: float = 1e-6, speed: float = 1.0) -> dict:
    """One ``log_history`` train entry of GRPO at ``step`` (its reward ``correctness(step *
    speed)``)."""
    c = correctness(step * speed)
    fn = "rewards/correctness_reward" + ("" if old else "/mean")
    e = {
        "loss": 0.01 * step,
        "grad_norm": 1.0 / (1 + step),
        "learning_rate": lr * min(1.0, step / 10),
        "kl": 0.001 * step,
        "reward": c + 0.5,
        "reward_std": 0.3,
        fn: c,
        ("completion_length" if old else "completions/mean_length"): 100.0 + step,
        "step": step,
        "epoch": step / 100,
    }
    if not old:
        e |= {
            "rewards/correctness_reward/std": 0.9,
            "rewards/format_reward/mean": 0.5,
            "entropy": 0.5,
            "frac_reward_zero_std": 0.25,
        }
    return e


def trl_grpo(
    folder: Path,
    *,
    last: int = 60,
    old: bool = False,
    args: dict | None = None,
    checkpoints: tuple[int, ...] = (20, 40, 60),
    speed: float = 1.0,
) -> Path:
    """A GRPO output folder logging every 5 steps up to ``last``, with ``checkpoint-N``."""
    lr = (args or TRL_ARGS)["learning_rate"]
    hist = [trl_entry(s, old=old, lr=lr, speed=speed) for s in range(5, last + 1, 5)]
    for n in checkpoints:
        (folder / f"checkpoint-{n}").mkdir(parents=True, exist_ok=True)
        state = {
            "global_step": n,
            "max_steps": TRL_ARGS["max_steps"],
            "logging_steps": 5,
            "log_history": [e for e in hist if e["step"] <= n],
        }
        (folder / f"checkpoint-{n}" / "trainer_state.json").write_text(json.dumps(state))
    if not old:
        (folder / "training_args.json").write_text(json.dumps(args or TRL_ARGS))
    return folder


VERL_CONFIG = """\
data:
  train_batch_size: 16
  val_max_samples: 200
  seed: 7
actor_rollout_ref:
  rollout:
    n: 5
  actor:
    optim:
      lr: 1.0e-06
trainer:
  total_training_steps: 8
  experiment_name: ppo-gsm8k
"""
#: Completions per verl training value: 16 prompts x 5 responses.
VERL_TRAIN_N = 80
VAL_KEY = "val-core/openai/gsm8k/acc/mean@1"


def verl_jsonl(folder: Path, *, diverge_at: int | None = 6) -> Path:
    """verl's file-logger JSONL (steps 0–8, validation every 2 steps) and its Hydra config;
    the loss is null (non-finite) from ``diverge_at`` on."""
    folder.mkdir(parents=True, exist_ok=True)
    lines = []
    for s in range(0, 9):
        d: dict = {
            "critic/score/mean": accuracy(s * 10),
            "critic/rewards/mean": accuracy(s * 10),
            "actor/entropy": 1.0 - 0.05 * s,
            "actor/grad_norm": 0.5,
            "actor/ppo_kl": 0.01,
            "response_length/mean": 200.0 + s,
            "actor/pg_loss": None if diverge_at is not None and s >= diverge_at else 0.1,
            "training/global_step": s,
            "timing_s/gen": "1.5s",  # a string field, never a number
            "actor/lr": 1e-6,
        }
        if s % 2 == 0:
            d[VAL_KEY] = accuracy(s * 10)
            d["val-aux/openai/gsm8k/score/samples"] = [1.0] * s + [0.0] * (10 - s)
        lines.append(json.dumps({"step": s, "data": d}))
    (folder / "ppo.jsonl").write_text("\n".join(lines) + "\n")
    (folder / ".hydra").mkdir(exist_ok=True)
    (folder / ".hydra" / "config.yaml").write_text(VERL_CONFIG)
    return folder / "ppo.jsonl"


PREFIX_AGENTS = ("solver", "verifier", "judge")


def prefix_level(agent: str, step: int) -> float:
    """Agent ``agent``'s accuracy at a step in the per-agent prefix log."""
    k = PREFIX_AGENTS.index(agent)
    return 0.1 + (0.6 - 0.1 * k) * (1 - np.exp(-step / (20 + 10 * k)))


def prefix_csv(path: Path) -> Path:
    """A W&B history CSV of a three-agent run, one metric prefix per agent (MARTI's shape:
    ``<agent>/accuracy``, ``<agent>/loss``), step column ``train/global_step``."""
    steps = range(0, 101, 10)
    cols = ["_step", "train/global_step"]
    cols += [f"{a}/{k}" for a in PREFIX_AGENTS for k in ("accuracy", "loss")]
    rows = [",".join(cols)]
    for i, s in enumerate(steps):
        vals = [str(i), str(s)]
        for a in PREFIX_AGENTS:
            vals += [f"{prefix_level(a, s):.12g}", "0.5"]
        rows.append(",".join(vals))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(rows) + "\n")
    return path


def mlflow_run(exp: Path) -> Path:
    """An MLflow experiment folder with one run logging ``eval/accuracy`` every 10 steps."""
    run = exp / "0a1b2c"
    (run / "metrics" / "eval").mkdir(parents=True)
    (run / "params").mkdir()
    (run / "tags").mkdir()
    (run / "meta.yaml").write_text("run_id: 0a1b2c\nrun_name: mlflow-run\nstatus: 3\n")
    (run / "tags" / "mlflow.runName").write_text("mlflow-run")
    (run / "params" / "learning_rate").write_text("1e-6")
    text = "".join(f"17000000{s:03d} {float(accuracy(s))!r} {s}\n" for s in range(0, 101, 10))
    (run / "metrics" / "eval" / "accuracy").write_text(text)
    return exp


def tensorboard_run(folder: Path) -> Path:
    """TensorBoard event files of one run logging ``eval/accuracy`` every 10 steps."""
    from tensorboard.summary import Writer

    w = Writer(str(folder))
    for s in range(0, 101, 10):
        w.add_scalar("eval/accuracy", accuracy(s), step=s)
    w.flush()
    w.close()
    return folder


def write_all(root: Path) -> Path:
    """Every shape under ``root`` by the names docs/runlog.md's worked examples use."""
    trl_grpo(root / "grpo-gsm8k")
    trl_grpo(root / "grpo-lr3e-6", args={**TRL_ARGS, "learning_rate": 3e-6}, speed=1.5)
    trl_grpo(root / "grpo-old", old=True, checkpoints=(40,), last=40)
    verl_jsonl(root / "verl-gsm8k")
    prefix_csv(root / "marti.csv")
    mlflow_run(root / "mlruns" / "1")
    tensorboard_run(root / "tb-run")
    return root
