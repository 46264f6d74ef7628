"""One training step (supervised warm-up or RL) and evaluation, on a :class:`State`; kept apart
from the run loop (``_train.py``) so each piece stays small and testable."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from ._member_update import mixed, score, targets, update_role, warmup_role
from ._mixed import generate_mixed
from ._rl import advantages, assign_credit, corrupt
from ._signal_meter import Trace, ess, k3_kl
from ._staleness import Snapshot, use_snapshot
from ._state import State as State
from ._tasks import Probe, Problem
from .config import TrainConfig

__all__ = ["State", "evaluate", "rl_step", "warmup_step"]


#: Rows per agent and step on which the training signal ``policy_kl`` is measured (one
#: no-grad forward of all agents' rows together after the optimizer step).
KL_ROWS = 2

#: Per role, the sampled token ids (N, T) and their log-probs under the sampling adapter.
Behaviour = dict[str, tuple[torch.Tensor, torch.Tensor]]


def _assign(n: int, k: int) -> np.ndarray:
    return np.arange(n) % k


def _generate(
    st: State,
    role: str,
    prompts: list[str],
    *,
    greedy: bool,
    member: int | None = None,
    stale: Snapshot | None = None,
    behaviour: Behaviour | None = None,
    assign: np.ndarray | None = None,
) -> list[str]:
    """Outputs of ``role`` for ``prompts`` (pool members by index ``i mod K``, by ``assign``
    (N,), or one ``member``), sampled with the adapters of ``stale`` if given (policy lag);
    with ``behaviour`` the sampled ids and their log-probs from the sampling pass are stored
    there under ``role``."""
    names = st.members[role]
    n_new = st.task.out_len[role]
    if member is not None:
        assign = np.full(len(prompts), member)
    elif assign is None:
        assign = _assign(len(prompts), len(names))
    if member is None and mixed(st, role):  # all members in one batch
        enc = st.policy.encode(prompts)
        comp, logp = generate_mixed(
            st.policy,
            names,
            enc,
            assign,
            n_new,
            greedy=greedy,
            temperature=st.cfg.rl.temperature,
            generator=st.gen,
            stale=stale,
        )
        if behaviour is not None:
            behaviour[role] = (comp, logp)
        return [t[:n_new] for t in st.policy.decode(comp)]
    texts: list[str] = [""] * len(prompts)
    dev = st.policy.device
    if behaviour is not None:
        shape = (len(prompts), n_new)
        behaviour[role] = (
            torch.zeros(shape, dtype=torch.long, device=dev),
            torch.zeros(shape, dtype=torch.float32, device=dev),
        )
    for k, name in enumerate(names):
        idx = np.nonzero(assign == k)[0]
        if idx.size == 0:
            continue
        enc = st.policy.encode([prompts[i] for i in idx])
        kw: dict[str, Any] = {
            "greedy": greedy,
            "temperature": st.cfg.rl.temperature,
            "generator": st.gen,
        }
        with use_snapshot(st.policy, name, stale):
            if behaviour is None:
                comp = st.policy.generate(name, enc, n_new, **kw)
            else:
                comp, logp = st.policy.generate(name, enc, n_new, with_logp=True, **kw)
                ids_all, logp_all = behaviour[role]
                rows = torch.as_tensor(idx, device=dev)
                ids_all[rows], logp_all[rows] = comp, logp
        for i, t in zip(idx, st.policy.decode(comp), strict=True):
            texts[int(i)] = t[:n_new]
    return texts


def _lr(st: State, step: int, role: str, factors: dict[str, dict[str, float]]) -> float:
    """Learning rate of ``role`` at ``step``: ramp x per-role scale (``rl.lr_scale``, else
    the task's default) x coupling factor."""
    ramp = min(1.0, (step + 1) / 10)
    scale = float(st.cfg.rl.lr_scale.get(role, st.task.lr_scale.get(role, 1.0)))
    return st.cfg.rl.lr * ramp * scale * factors[role]["coupling"]


def _set_lr(st: State, step: int, factors: dict[str, dict[str, float]]) -> None:
    for group in st.opt.param_groups:
        group["lr"] = _lr(st, step, group["role"], factors)


def _clip_and_step(st: State) -> None:
    groups = st.pool.trainable()
    clip = st.cfg.rl.grad_clip
    norms = [torch.nn.utils.clip_grad_norm_(ps, clip, foreach=True) for _, ps in groups]
    if st.meter is not None:
        st.meter.before_step(groups)
    st.opt.step()
    if st.meter is not None:
        st.meter.after_step(groups, norms)
    st.opt.zero_grad(set_to_none=True)


def _lengths(st: State, texts: list[str], role: str) -> float:
    """Mean response length in tokens (cut to the role's output length, as trained)."""
    n = st.task.out_len[role]
    return float(np.mean([len(st.policy.tok.encode(t)[:n]) for t in texts]))


def warmup_step(st: State, step: int) -> None:
    """Supervised step on the role formats: gold upstream inputs, gold targets (CE loss)."""
    cfg, task, pol = st.cfg, st.task, st.policy
    factors = st.edges.factors()
    _set_lr(st, step, factors)
    st.ring.advance(pol)  # the lag counts every optimizer step
    if st.meter is not None:
        st.meter.begin()
    probs = task.sample(st.rng, cfg.rl.warmup_batch, split="train", shifted=_shifted(cfg, step))
    measured = {}
    for role in st.roles:
        n = max(1, round(factors[role]["budget"] * len(probs)))
        sub = probs[:n]
        prompts = [task.prompt(role, p, task.gold_upstream(role, p)) for p in sub]
        golds = [p.gold[role] for p in sub]
        assign = _assign(len(sub), len(st.members[role]))
        ok_all, losses, ents = warmup_role(st, role, prompts, golds, assign)
        acc = float(ok_all.mean())
        measured[role] = acc
        if st.meter is not None:
            st.meter.put(role, entropy=float(np.mean(ents)))
        st.record(
            role,
            loss=float(np.mean(losses)),
            entropy=float(np.mean(ents)),
            lr=_lr(st, step, role, factors),
            budget_share=n / len(probs),
        )
    _clip_and_step(st)
    st.edges.update(measured)


def _hit(cfg: TrainConfig, role: str) -> bool:
    """Whether a spurious-reward pulse corrupts ``role``'s rewards (``task.spurious.roles``)."""
    roles = cfg.task.spurious.roles
    return not roles or role in roles


def _shifted(cfg: TrainConfig, step: int) -> bool:
    return cfg.task.shift.step is not None and step >= cfg.task.shift.step


def rollout(
    st: State,
    problems: list[Problem],
    *,
    greedy: bool,
    stale: Snapshot | None = None,
    behaviour: Behaviour | None = None,
    assign: dict[str, np.ndarray] | None = None,
) -> tuple[list[dict[str, str]], dict[str, list[str]]]:
    """Run the X → Y → Z pipeline (with the adapters of ``stale`` if given, the pool members
    of ``assign`` (role → (N,)) if given); returns per-rollout outputs and per-role prompts
    (and fills ``behaviour`` if given)."""
    outs: list[dict[str, str]] = [{} for _ in problems]
    prompts: dict[str, list[str]] = {}
    for role in st.roles:
        prompts[role] = [st.task.prompt(role, p, o) for p, o in zip(problems, outs, strict=True)]
        texts = _generate(
            st,
            role,
            prompts[role],
            greedy=greedy,
            stale=stale,
            behaviour=behaviour,
            assign=None if assign is None else assign[role],
        )
        for o, t in zip(outs, texts, strict=True):
            o[role] = t
    return outs, prompts


def rl_step(st: State, step: int, *, pulse: bool, pulse_mode: str, log_kl: bool) -> None:
    """One RL step: sample pipelines, credit, advantages, per-agent policy update(s)."""
    cfg, task, pol, rl = st.cfg, st.task, st.policy, st.cfg.rl
    factors = st.edges.factors()
    _set_lr(st, step, factors)
    stale = st.ring.advance(pol)  # None: on-policy (rl.staleness 0, or step 0)
    meter = st.meter
    if meter is not None:
        meter.begin()
    base = task.sample(st.rng, rl.batch, split="train", shifted=_shifted(cfg, step))
    probs = [p for p in base for _ in range(rl.group)]
    sampled: Behaviour | None = None if stale is None else {}
    if st.pool.es:
        st.pool.es_begin()
    assign = st.pool.draw(st.rng, len(probs))
    outs, prompts = rollout(st, probs, greedy=False, stale=stale, behaviour=sampled, assign=assign)
    e2e = np.array([task.verify(p, o[st.roles[-1]]) for p, o in zip(probs, outs, strict=True)])
    local = {}
    for role in st.roles:
        gold = [
            task.local_gold(role, p, o) or p.gold[role] for p, o in zip(probs, outs, strict=True)
        ]
        local[role] = np.array([float(o[role] == g) for o, g in zip(outs, gold, strict=True)])
    st.acc_e2e.append(float(e2e.mean()))
    st.edges.update({r: float(v.mean()) for r, v in local.items()})
    rewards = assign_credit(e2e, local, st.roles, mode=rl.credit, discount=rl.discount)
    e2e_l, local_l = e2e, local
    if pulse:  # every role's reward corrupted (same draws whichever roles the pulse hits)
        e2e_l = corrupt(e2e, pulse_mode, st.rng)
        local_l = {r: corrupt(v, pulse_mode, st.rng) for r, v in local.items()}
        bad = assign_credit(e2e_l, local_l, st.roles, mode=rl.credit, discount=rl.discount)
        rewards = {r: bad[r] if _hit(cfg, r) else rewards[r] for r in st.roles}
    work = []
    for role in st.roles:
        # interaction reward: the part the credit mode does not already pay
        hit = pulse and _hit(cfg, role)
        e2e_r, local_r = (e2e_l, local_l) if hit else (e2e, local)
        inter = e2e_r if rl.credit == "role" else local_r[role]
        r = rewards[role] + factors[role]["credit"] * inter
        adv, mean = advantages(r, algo=rl.algo, group=rl.group, baseline=st.baseline.get(role, 0.0))
        st.baseline[role] = (
            rl.baseline_decay * st.baseline.get(role, mean) + (1 - rl.baseline_decay) * mean
        )
        st.pool.observe(role, r)
        n = max(1, round(factors[role]["budget"] * rl.batch)) * rl.group
        if meter is not None:
            meter.reward(role, r, rl.group)
            meter.put(role, response_length=_lengths(st, [o[role] for o in outs[:n]], role))
        if st.pool.es:
            st.pool.es_gradient(role, r[:n])
            lr_role = _lr(st, step, role, factors)
            st.record(role, reward=float(r.mean()), reward_std=float(r.std()), lr=lr_role)
            st.record(role, budget_share=n / len(probs))
            continue
        comp = targets(pol, [o[role] for o in outs[:n]], task.out_len[role])
        work.append(
            (
                role,
                prompts[role][:n],
                comp,
                torch.tensor(adv[:n], dtype=torch.float32, device=pol.device),
                r,
                n,
            )
        )
    if st.pool.es:
        _clip_and_step(st)
        return
    epochs = rl.ppo_epochs if rl.algo == "ppo" else 1
    old: dict[tuple[str, int], torch.Tensor] = {}
    traces = {w[0]: Trace(w[5], w[2].shape[1], pol.device) for w in work if meter is not None}
    for epoch in range(epochs):
        for role, pr, comp, adv, r, n in work:
            losses, ents, kls = update_role(
                st,
                role,
                pr,
                comp,
                adv,
                assign[role][:n],
                old,
                epoch=epoch,
                last=epoch == epochs - 1,
                log_kl=log_kl,
                stale=stale,
                sampled=sampled,
                trace=traces.get(role),
            )
            if epoch == epochs - 1:
                if meter is not None:
                    kl = float(np.mean(kls)) if kls else None
                    meter.put(role, entropy=float(np.mean(ents)), kl=kl)
                st.record(
                    role,
                    reward=float(r.mean()),
                    reward_std=float(r.std()),
                    loss=float(np.mean(losses)),
                    entropy=float(np.mean(ents)),
                    kl=float(np.mean(kls)) if kls else None,
                    lr=_lr(st, step, role, factors),
                    budget_share=n / len(probs),
                )
        _clip_and_step(st)
    if meter is not None:
        _policy_signals(st, step, work, traces, assign)


def _policy_signals(
    st: State,
    step: int,
    work: list[Any],
    traces: dict[str, Trace],
    assign: dict[str, np.ndarray],
) -> None:
    """``ess`` of the step's last update's weights, and ``policy_kl`` from one no-grad
    forward of each agent's batch under its updated adapters."""
    meter = st.meter
    if meter is None:
        return
    rows = {role: _kl_rows(n, st.cfg.seed, step) for role, _, _, _, _, n in work}
    batches = {
        role: ([pr[i] for i in rows[role]], comp[rows[role]], assign[role][rows[role]])
        for role, pr, comp, _, _, _ in work
    }
    new = score(st, batches)
    for role, *_ in work:
        prev = traces[role].logp0[rows[role]]
        meter.put(role, ess=ess(traces[role].logw), policy_kl=k3_kl(new[role], prev))


def _kl_rows(n: int, seed: int, step: int) -> np.ndarray:
    """Rows of an agent's ``n`` the policy KL is measured on: :data:`KL_ROWS` of them drawn
    from a generator of the seed and step alone (the run's own generators are not touched,
    so a resumed run draws the same rows)."""
    if n <= KL_ROWS:
        return np.arange(n)
    return np.sort(np.random.default_rng([seed, 69, step]).choice(n, KL_ROWS, replace=False))


def evaluate(
    st: State, step: int, probes: dict[str, list[Probe]], test: list[Problem]
) -> tuple[dict[str, float], float, dict[str, list[float]]]:
    """Probe competence per role (mean over pool members; with evolution strategies the
    centre's), end-to-end test accuracy."""
    comp: dict[str, float] = {}
    per_member: dict[str, list[float]] = {}
    if st.pool.es:
        st.pool.centre_to_members()
    for role in st.roles:
        items = probes[role]
        prompts = [st.task.prompt(role, pb.problem, pb.upstream) for pb in items]
        scores = []
        for k in range(1 if st.pool.es else len(st.members[role])):
            outs = _generate(st, role, prompts, greedy=True, member=k)
            scores.append(
                float(np.mean([o == pb.target for o, pb in zip(outs, items, strict=True)]))
            )
        per_member[role] = scores
        comp[role] = float(np.mean(scores))
    outs, _ = rollout(st, test, greedy=True)
    acc = float(
        np.mean([st.task.verify(p, o[st.roles[-1]]) for p, o in zip(test, outs, strict=True)])
    )
    return comp, acc, per_member


def metric_rows(st: State) -> dict[str, dict[str, Any]]:
    """Averages of the accumulated per-step metrics; resets the accumulators."""
    out = {}
    for role in st.roles:
        d = st.acc.get(role, {})
        out[role] = {k: float(np.mean(v)) for k, v in d.items() if v}
    st.acc = {}
    return out
