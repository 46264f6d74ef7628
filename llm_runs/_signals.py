"""The training signals a run log carries beside competences (torch-free).

One declaration, read by llm_runs (which writes them per agent and optimizer step), by
calibrate's importers (which map TRL's and verl's keys onto the same names) and by
``calibrate watch`` (which computes its early-warning indicators on them).
"""

from __future__ import annotations

from types import MappingProxyType

__all__ = ["SIGNALS", "SIGNALS_FILE"]

#: File of a run folder holding one row per optimizer step and agent (schema 3).
SIGNALS_FILE = "signals.jsonl"

#: Signal name -> what it is, with its unit. Each value is per agent and optimizer step.
SIGNALS = MappingProxyType(
    {
        "grad_norm": "L2 norm of the gradient of the trained parameters before clipping",
        "update_norm": "L2 norm of the parameter change made by the optimizer step",
        "policy_kl": "mean per-token KL(previous policy || updated policy) on the batch, nats",
        "kl": "mean per-token KL to the frozen base (TRL's `kl`), nats",
        "entropy": "mean per-token policy entropy on the batch, nats",
        "ess": "effective sample size of the importance weights / batch size, in (0, 1]",
        "reward_mean": "mean training reward of the batch",
        "reward_var": "variance of the training reward over the batch",
        "response_length": "mean response length of the batch, tokens",
        "frac_reward_zero_std": "share of prompt groups whose rewards all tie (TRL), in [0, 1]",
    }
)
