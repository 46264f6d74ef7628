"""From a log's scalars to competence curves: meanings, evaluation sizes, points, status.

Every importer first reads its log into *scalars*, a long table ``(run, step, key, value)``
with the framework's own metric names, and the run's configuration as a nested mapping.
:func:`curves_from_scalars` applies a :class:`~._mapping.KeyMapping`: it joins the mapped
keys by step (sparse validation metrics keep only the steps at which they were logged),
turns values into competences by what they mean (:mod:`._meaning`), takes each evaluation
size from ``--n-eval`` or from what the importer derived from the run's arguments
(:class:`Point`), records the run's status (:mod:`._status`) and its training signals, and
returns the :class:`~calibrate.CurveData` every other input gives.
"""

from __future__ import annotations

import dataclasses
import re
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from .._curve_data import CurveData, DataError, DataWarning
from ._mapping import KeyMapping, flat_numbers
from ._meaning import Meaning, check_behaviour, check_name, std_key
from ._status import run_status, signal_table

__all__ = [
    "Point",
    "RunInfo",
    "curves_from_scalars",
    "report_unreadable",
    "scalar_frame",
]

#: Columns of the long table, never taken from a config.
_RESERVED = frozenset({"run", "step", "agent", "competence", "n_eval", "successes", "seed"})
#: Logged keys that are hyperparameters (their peak becomes a covariate under the key).
_LOGGED_HYPER = re.compile(r"(^|/)(learning_rate|lr)$")
#: A reward function's key in one policy's log (TRL: ``rewards/<fn>/mean``, older
#: ``rewards/<fn>``; its TensorBoard tags ``train/rewards/<fn>/mean``).
_REWARD_FN = re.compile(r"^(eval_|train/|eval/)?rewards/[^/]+(/mean)?$")


@dataclasses.dataclass(frozen=True)
class Point:
    """What one logged value of a key is.

    Attributes:
        kind: ``"window"`` (a mean over the ``window`` optimizer steps ending at its step,
            as a training log's values are) or ``"eval"`` (an evaluation at its step).
        window: Steps the value averages over (1 for an evaluation).
        n_eval: Completions behind each value, when the run's arguments determine it.
        n_eval_from: How ``n_eval`` was derived, in words.
    """

    kind: str = "eval"
    window: int = 1
    n_eval: int | None = None
    n_eval_from: str = ""


@dataclasses.dataclass(frozen=True)
class RunInfo:
    """What an importer read about one run besides its scalars.

    Attributes:
        point: Key → :class:`Point` (None: every key an evaluation of unknown size).
        max_steps: The configured number of training steps (None: unknown).
        one_policy: The log is one policy's (TRL): several agents mapped onto its reward
            functions are refused unless forced.
    """

    point: Callable[[str], Point] | None = None
    max_steps: int | None = None
    one_policy: bool = False


def _covariates(
    config: Mapping[str, Any],
    mapping: KeyMapping,
    source: str,
    seed_keys: Sequence[str],
    logged: Mapping[str, float],
) -> dict[str, float]:
    flat = {**logged, **flat_numbers(config)}  # the config's value wins over the log's
    hyper = {k: v for k, v in flat.items() if k not in _RESERVED}
    for key in seed_keys:
        if key in flat:
            hyper["seed"] = flat[key]
            break
    for name, key in mapping.covariates.items():
        if key not in flat:
            near = sorted(k for k in flat if k.rsplit(".", 1)[-1] == key.rsplit(".", 1)[-1])
            hint = f" (did you mean {near[:5]}?)" if near else ""
            raise DataError(f"{source}: --covariate {name}: the config has no number {key!r}{hint}")
        hyper[name] = flat[key]
    return hyper


def _logged_hyper(grp: pd.DataFrame) -> dict[str, float]:
    """Logged hyperparameters (``learning_rate``, ``actor/lr``): each at its peak (the
    configured rate of a warm-up-and-decay schedule)."""
    out = {}
    for key, sub in grp.groupby("key", sort=True):
        if _LOGGED_HYPER.search(str(key)):
            v = sub["value"].to_numpy(dtype=float)
            if np.isfinite(v).any():
                out[str(key)] = float(np.nanmax(v))
    return out


def _one_policy(
    agents: Mapping[str, tuple[str, Meaning]], info: RunInfo, mapping: KeyMapping, source: str
) -> None:
    keys = [k for k, _ in agents.values()]
    fns = [k for k in keys if _REWARD_FN.match(k)]
    if len(agents) < 2 or mapping.force or not (info.one_policy or len(fns) >= 2):
        return
    raise DataError(
        f"{source}: agents {sorted(agents)} are mapped to {sorted(keys)}, the rewards of one "
        "policy, not agents of a network: fit one key with --motif single (or map the agents "
        "of a multi-agent log), or pass --force-key"
    )


def _samples(scalars: pd.DataFrame, run: str, key: str) -> dict[int, np.ndarray]:
    got = scalars.attrs.get("samples", {})
    return {st: np.asarray(v, float) for (r, st, k), v in got.items() if r == run and k == key}


def _size(mapping: KeyMapping, agent: str, point: Point, source: str) -> tuple[int, str]:
    given = mapping.given_size(agent)
    if given is not None:
        return given, "--n-eval"
    if point.n_eval is not None:
        return point.n_eval, point.n_eval_from
    why = f" ({point.n_eval_from})" if point.n_eval_from else ""
    raise DataError(
        f"{source}: the log does not record the evaluation size of agent {agent!r}{why}; "
        "give --n-eval N (or AGENT=N)"
    )


def _agent_curve(grp, run, agent, key, meaning, mapping, info, source, strict, scalars):
    """One agent's rows of the long table and its row of the sources table."""
    sub = grp.loc[grp["key"] == key].sort_values("step", kind="stable")
    steps, vals = sub["step"].to_numpy(), sub["value"].to_numpy(dtype=float)
    point = info.point(key) if info.point is not None else Point()
    if not mapping.force:
        check_name(key, agent, meaning, source)
    if meaning.kind == "threshold":
        samples = _samples(scalars, run, key)
        if not samples:
            raise DataError(
                f"{source}: key {key!r} (agent {agent}) logs no per-sample rewards, only one "
                "value per step: a threshold cannot be applied; give its range KEY:LO:HI"
            )
        steps = np.array(sorted(samples))
        above = (
            (lambda x: x > meaning.threshold)
            if meaning.strict_above
            else (lambda x: x >= meaning.threshold)
        )
        n = np.array([np.isfinite(samples[s]).sum() for s in steps])
        vals = np.array([above(samples[s][np.isfinite(samples[s])]).sum() for s in steps]) / n
        sizes, n_from, point = n, "per-sample rewards logged", Point("eval")
    else:
        size, n_from = _size(mapping, agent, point, source)
        sizes = np.full(len(steps), size)
    fin = np.isfinite(vals)
    if not fin.all():
        shown = ", ".join(str(int(s)) for s in steps[~fin][:5])
        msg = f"{source}: key {key!r} (agent {agent}) is not finite at step(s) {shown}"
        if strict:
            raise DataError(msg + "; fix them or run without --strict to drop them")
        warnings.warn(msg + "; dropped (the run's status says so)", DataWarning, stacklevel=4)
        steps, vals, sizes = steps[fin], vals[fin], sizes[fin]
    if not mapping.force:
        sk = std_key(key, set(grp["key"].unique()))
        spread = None
        if sk is not None:
            s = grp.loc[grp["key"] == sk]
            spread = (s["value"].to_numpy(dtype=float), s["step"].to_numpy())
        check_behaviour(vals, steps, key, agent, meaning, source, spread)
    comp = (
        np.clip(meaning.competence(vals), 0.0, 1.0) if mapping.force else (meaning.competence(vals))
    )
    table = pd.DataFrame(
        {"run": run, "step": steps, "agent": agent, "competence": comp, "n_eval": sizes}
    )
    where = (
        f"mean of the {point.window} step(s) ending at step"
        if point.kind == "window"
        else "evaluation at step"
    )
    src = {
        "run": run,
        "agent": agent,
        "key": key,
        "meaning": meaning.label(),
        "lo": meaning.lo,
        "hi": meaning.hi,
        "n_eval_from": n_from,
        "point": where,
        "window": point.window,
    }
    return table, src


def curves_from_scalars(
    scalars: pd.DataFrame,
    mapping: KeyMapping,
    *,
    source: str,
    configs: Mapping[str, Mapping[str, Any]] | None = None,
    seed_keys: Sequence[str] = ("seed",),
    strict: bool = False,
    info: Mapping[str, RunInfo] | None = None,
) -> CurveData:
    """Turn logged scalars into validated competence curves.

    Args:
        scalars: Long table ``run, step, key, value`` in log order (NaN: a non-finite or
            null value); a (run, step, key) logged twice keeps its last value (a resumed run
            logs its steps again). ``attrs["samples"]``: per ``(run, step, key)`` a list of
            per-sample values, where the log holds them.
        mapping: Which keys are competences, what they mean, the evaluation sizes.
        source: File or folder named in messages.
        configs: Per run, its configuration (nested): numeric leaves become covariates
            under their dotted names, plus the mapping's named covariates; logged
            hyperparameters (``learning_rate``) too, at their peak, where the config lacks
            them.
        seed_keys: Config keys tried, in order, for the run's seed.
        strict: Raise on NaN values instead of dropping them with a warning.
        info: Per run, what its importer derived (:class:`RunInfo`).

    Returns:
        The curves, with :attr:`~calibrate.CurveData.sources` (per run and agent: key,
        meaning, evaluation size's origin, point kind), :attr:`~calibrate.CurveData.status`
        and :attr:`~calibrate.CurveData.signals`.
    """
    configs = configs or {}
    info = info or {}
    tables, sources, status, signals = [], [], {}, []
    lost = scalars.attrs.get("unreadable", [])
    for run, grp in scalars.groupby("run", sort=True):
        run = str(run)
        grp = grp.drop_duplicates(["step", "key"], keep="last")
        run_info = info.get(run, RunInfo())
        sampled = {k for (r, _, k) in scalars.attrs.get("samples", {}) if r == run}
        agents = mapping.resolve_meanings({*grp["key"].unique(), *sampled}, source)
        _one_policy(agents, run_info, mapping, source)
        report_unreadable(
            [x for x in lost if x[0] == run and x[2] in {k for k, _ in agents.values()}],
            source,
            strict,
        )
        hyper = _covariates(configs.get(run, {}), mapping, source, seed_keys, _logged_hyper(grp))
        curves = {}
        for agent, (key, meaning) in sorted(agents.items()):
            t, src = _agent_curve(
                grp, run, agent, key, meaning, mapping, run_info, source, strict, scalars
            )
            tables.append(t.assign(**hyper))
            sources.append(src)
            curves[agent] = (t["step"].to_numpy(), t["competence"].to_numpy())
        status[run] = run_status(grp, curves, run_info.max_steps)
        sig = signal_table(grp, run, next(iter(agents)) if len(agents) == 1 else "*")
        if sig is not None:
            signals.append(sig)
    if not tables:
        raise DataError(f"{source}: no logged values")
    df = pd.concat(tables, ignore_index=True)
    data = CurveData.from_table(df, strict=strict, source=source)
    return dataclasses.replace(
        data,
        sources=pd.DataFrame(sources),
        status={r: s.to_dict() for r, s in status.items()},
        signals=pd.concat(signals, ignore_index=True) if signals else None,
    )


def report_unreadable(
    cells: Sequence[tuple[str, Any, str, Any]], source: str, strict: bool
) -> None:
    """Name the competence cells a reader could not read as numbers: a warning that counts
    them and names each (key, step) and value, or, under ``strict``, an error.

    Raises:
        DataError: ``strict`` and any such cell.
    """
    if not cells:
        return
    shown = ", ".join(f"{k} at step {st} ({raw!r})" for _, st, k, raw in cells[:5])
    more = f" and {len(cells) - 5} more" if len(cells) > 5 else ""
    msg = f"{source}: {len(cells)} value(s) that are not finite numbers: {shown}{more}"
    if strict:
        raise DataError(msg + "; fix them or run without --strict to drop them")
    warnings.warn(msg + "; dropped", DataWarning, stacklevel=3)


def scalar_frame(
    rows: Iterable[tuple[str, int, str, float]],
    source: str,
    unreadable: Iterable[tuple[str, Any, str, Any]] = (),
) -> pd.DataFrame:
    """A scalars table from ``(run, step, key, value)`` tuples (steps must be integers).

    ``unreadable`` holds the cells a reader could not read as a number, ``(run, step, key,
    raw)`` (a string ``"0.5"`` or a boolean in JSONL, ``abc``, ``55%`` or ``inf`` in a CSV):
    :func:`curves_from_scalars` names each one of a competence key and drops it with a
    warning, or refuses under ``strict`` (issue 72 §2: they were dropped without a word).
    """
    df = pd.DataFrame(list(rows), columns=["run", "step", "key", "value"])
    df.attrs["unreadable"] = [(str(r), st, str(k), raw) for r, st, k, raw in unreadable]
    if df.empty:
        raise DataError(f"{source}: no numeric values logged")
    step = pd.to_numeric(df["step"], errors="coerce").to_numpy(dtype=float)
    bad = ~np.isfinite(step) | (step < 0) | (np.abs(step - np.round(step)) > 1e-9)
    if bad.any():
        raise DataError(
            f"{source}: step {df['step'].iloc[int(np.argmax(bad))]!r} is not an integer >= 0"
        )
    df["step"] = np.round(step).astype(np.int64)
    df["value"] = pd.to_numeric(df["value"], errors="coerce").astype(float)
    return df
