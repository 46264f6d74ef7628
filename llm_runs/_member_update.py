"""One role's gradient update over its adapters: the supervised warm-up loss and the RL
policy loss, either one forward and backward per pool member (``pool.batched`` false, and
always for a single agent) or all members' rows in one mixed batch (:mod:`._mixed`).

Both paths compute the same per-member losses (each a mean over that member's rows, as
:func:`~llm_runs._rl.policy_loss` defines it) and the same gradients: a member's adapter
only sees its own rows, so the gradient of the summed member losses with respect to member
k is that of member k's loss. They differ only in float rounding (other batch shapes and
prompt padding widths, batched matmuls for the LoRA update).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import torch

from ._mixed import mixed_members
from ._policy import Encoded, MultiAdapter
from ._rl import policy_loss
from ._signal_meter import Trace
from ._staleness import Snapshot, use_snapshot

if TYPE_CHECKING:
    from ._state import State

__all__ = ["mixed", "score", "targets", "update_role", "warmup_role"]

#: Per-member float metrics of one update: ``(losses, entropies, kls)``.
Metrics = tuple[list[float], list[float], list[float]]


def _rows(enc: Encoded, rows: torch.Tensor) -> Encoded:
    return Encoded(enc.ids[rows], enc.mask[rows], enc.pos[rows])


def _parts(member_of: np.ndarray, k: int) -> list[tuple[int, np.ndarray]]:
    """``(member, row indices)`` of every member with rows, members ascending."""
    out = [(m, np.nonzero(member_of == m)[0]) for m in range(k)]
    return [(m, idx) for m, idx in out if idx.size]


def mixed(st: State, role: str) -> bool:
    """Whether ``role``'s members run as one mixed batch (``pool.batched``, K > 1)."""
    return st.cfg.pool.batched and len(st.members[role]) > 1


def _behaviour_logp(
    st: State,
    name: str,
    stale: Snapshot,
    enc: Encoded,
    comp: torch.Tensor,
    sampled: tuple[torch.Tensor, torch.Tensor],
    idx: np.ndarray,
) -> torch.Tensor:
    """Log-probs of ``comp`` (N, T) under adapter ``name`` of the snapshot ``stale``.

    Taken from the sampling pass (``sampled``: the role's sampled ids and log-probs, rows
    ``idx``) for every row whose scored tokens are the sampled ones; the rare rows that
    decoding and re-encoding changed (a special token sampled mid-output, a tokenizer that
    does not round-trip) get a no-grad forward under the snapshot. Call it before any
    differentiable forward of ``name`` in the step, with ``name`` active.
    """
    rows = torch.as_tensor(idx, device=comp.device)
    width = comp.shape[1]
    ids, logp = sampled[0][rows, :width], sampled[1][rows, :width]
    same = (ids == comp).all(1)
    if bool(same.all()):
        return logp
    bad = torch.nonzero(~same).squeeze(1)
    with torch.no_grad(), use_snapshot(st.policy, name, stale):
        fix = st.policy.token_logprobs(
            _rows(enc, bad), comp[bad], temperature=st.cfg.rl.temperature
        )[0]
    logp = logp.clone()
    logp[bad] = fix
    return logp


def update_role(
    st: State,
    role: str,
    prompts: list[str],
    comp: torch.Tensor,
    adv: torch.Tensor,
    member_of: np.ndarray,
    old: dict[tuple[str, int], torch.Tensor],
    *,
    epoch: int,
    last: bool,
    log_kl: bool,
    stale: Snapshot | None,
    sampled: dict[str, tuple[torch.Tensor, torch.Tensor]] | None,
    trace: Trace | None = None,
) -> Metrics:
    """Policy-loss forward and backward of ``role``'s members (gradients accumulate).

    Args:
        st: The run state.
        role: The role.
        prompts: Its ``n`` prompts. comp: Their completions (n, T). adv: Advantages (n,).
        member_of: Member index of each row, (n,).
        old: Sampling-policy log-probs per ``(role, member)``, filled at epoch 0.
        epoch: PPO epoch (0 for one-update algorithms). last: The last epoch.
        log_kl: Compute the KL to the base even without a KL penalty.
        stale: The behaviour snapshot (policy lag) or None (on-policy).
        sampled: The sampling pass's ids and log-probs per role (with ``stale``).
        trace: Filled with the log-probs and importance weights the training signals need.

    Returns:
        Per-member losses, mean entropies and KLs (empty without a reference).
    """
    pol, rl = st.policy, st.cfg.rl
    names = st.members[role]
    out: Metrics = ([], [], [])
    parts = _parts(member_of, len(names))
    rows = {m: torch.as_tensor(idx, device=pol.device) for m, idx in parts}
    need_ref = rl.kl_coef > 0 or (log_kl and last)

    def loss_of(m: int, logp: torch.Tensor, ent: torch.Tensor, ref: torch.Tensor | None):
        if epoch == 0 and stale is None:
            old[(role, m)] = logp.detach()
        loss, kl = policy_loss(
            logp,
            old[(role, m)],
            adv[rows[m]],
            clip=rl.clip if rl.algo == "ppo" else None,
            entropy=ent,
            entropy_coef=rl.entropy_coef,
            ref_logp=ref,
            kl_coef=rl.kl_coef,
            is_cap=rl.is_cap if rl.staleness > 0 else None,
        )
        if trace is not None:
            trace.put(rows[m], logp, old[(role, m)], epoch)
        out[0].append(float(loss.detach()))
        out[1].append(float(ent.mean().detach()))
        if kl is not None:
            out[2].append(float(kl.detach()))
        return loss

    def ref_logp(enc: Encoded, c: torch.Tensor) -> torch.Tensor | None:
        if not need_ref:
            return None
        with torch.no_grad(), pol.base_only():
            return pol.token_logprobs(enc, c, temperature=rl.temperature)[0]

    behave = sampled if epoch == 0 and stale is not None else None  # behaviour log-probs
    if not mixed(st, role):  # one forward and backward per member
        for m, idx in parts:
            enc, c = pol.encode([prompts[i] for i in idx]), comp[rows[m]]
            pol.activate(names[m])
            if behave is not None and stale is not None:
                old[(role, m)] = _behaviour_logp(st, names[m], stale, enc, c, behave[role], idx)
            logp, ent, _ = pol.token_logprobs(enc, c, temperature=rl.temperature)
            pol.backward(names[m], loss_of(m, logp, ent, ref_logp(enc, c)))
        return out
    enc = pol.encode(prompts)
    if behave is not None and stale is not None:
        for m, idx in parts:
            sub, c = _rows(enc, rows[m]), comp[rows[m]]
            pol.activate(names[m])
            old[(role, m)] = _behaviour_logp(st, names[m], stale, sub, c, behave[role], idx)
    ref = ref_logp(enc, comp)  # before the block: the base alone
    with mixed_members(pol, names, member_of, train=True):
        logp, ent, _ = pol.token_logprobs(enc, comp, temperature=rl.temperature)
        total = [
            loss_of(m, logp[r], ent[r], None if ref is None else ref[r]) for m, r in rows.items()
        ]
        torch.stack(total).sum().backward()
    return out


def score(
    st: State, batches: dict[str, tuple[list[str], torch.Tensor, np.ndarray]]
) -> dict[str, torch.Tensor]:
    """No-grad log-probs of each role's completions under its members' current adapters, in
    one mixed forward over every role's rows (adapters routed per row, :mod:`._mixed`).

    Args:
        st: The run state.
        batches: Role -> ``(prompts (n,), completions (n, T), member index of each row)``.

    Returns:
        Role -> log-probs (n, T), rows in batch order.
    """
    pol = st.policy
    names = [n for role in batches for n in st.members[role]]
    offset = dict(
        zip(batches, np.cumsum([0] + [len(st.members[r]) for r in batches]), strict=False)
    )
    width = max(c.shape[1] for _, c, _ in batches.values())
    comp = torch.full((sum(len(p) for p, _, _ in batches.values()), width), pol.tok.eos_id,
                      dtype=torch.long, device=pol.device)  # fmt: skip
    prompts: list[str] = []
    assign = []
    for role, (pr, c, member_of) in batches.items():
        comp[len(prompts) : len(prompts) + len(pr), : c.shape[1]] = c
        prompts.extend(pr)
        assign.append(np.asarray(member_of) + offset[role])
    with torch.no_grad(), mixed_members(pol, names, np.concatenate(assign), train=False):
        logp = pol.token_logprobs(pol.encode(prompts), comp, temperature=st.cfg.rl.temperature)[0]
    out, start = {}, 0
    for role, (pr, c, _) in batches.items():
        out[role] = logp[start : start + len(pr), : c.shape[1]].float()
        start += len(pr)
    return out


def targets(pol: MultiAdapter, texts: list[str], n: int) -> torch.Tensor:
    """Token ids of ``texts`` cut to ``n``, right-padded with EOS to the longest, (N, T)."""
    seqs = [pol.tok.encode(t)[:n] for t in texts]
    width = max(len(s) for s in seqs)
    out = torch.full((len(seqs), width), pol.tok.eos_id, dtype=torch.long)
    for i, s in enumerate(seqs):
        out[i, : len(s)] = torch.tensor(s, dtype=torch.long)
    return out.to(pol.device)


def warmup_role(
    st: State, role: str, prompts: list[str], golds: list[str], member_of: np.ndarray
) -> tuple[torch.Tensor, list[float], list[float]]:
    """Supervised (cross-entropy) forward and backward of ``role``'s members on the gold
    outputs ``golds`` (gradients accumulate).

    Each member's targets are padded to that member's longest (as its own batch pads them),
    so in a mixed batch its loss, entropy and check stop at that width.

    Returns:
        ``(ok, losses, entropies)``: whether each row's greedy output is its target, (n,)
        float with rows grouped by member, and per-member losses and mean entropies.
    """
    pol = st.policy
    names = st.members[role]
    n_out = st.task.out_len[role]
    ok_all, losses, ents = [], [], []

    def loss_of(logp: torch.Tensor, ent: torch.Tensor, ok: torch.Tensor) -> torch.Tensor:
        loss = -logp.mean()
        ok_all.append(ok.all(1).float())
        losses.append(float(loss.detach()))
        ents.append(float(ent.mean().detach()))
        return loss

    parts = _parts(member_of, len(names))
    if not mixed(st, role):  # one forward and backward per member
        for m, idx in parts:
            enc = pol.encode([prompts[i] for i in idx])
            pol.activate(names[m])
            logp, ent, ok = pol.token_logprobs(enc, targets(pol, [golds[i] for i in idx], n_out))
            pol.backward(names[m], loss_of(logp, ent, ok))
        return torch.cat(ok_all), losses, ents
    enc, tgt = pol.encode(prompts), targets(pol, golds, n_out)
    with mixed_members(pol, names, member_of, train=True):
        logp, ent, ok = pol.token_logprobs(enc, tgt)
        total = []
        for _, idx in parts:
            r = torch.as_tensor(idx, device=pol.device)
            w = max(len(pol.tok.encode(golds[i])[:n_out]) for i in idx)  # the member's width
            total.append(loss_of(logp[r, :w], ent[r, :w], ok[r, :w]))
        torch.stack(total).sum().backward()
    return torch.cat(ok_all), losses, ents
