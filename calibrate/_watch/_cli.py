"""The ``watch`` command: follow a growing run log and warn before a collapse.

``python -m calibrate watch RUN [--fit PILOTS_FIT]`` reads RUN (an llm_runs run folder, or any
source ``fit`` reads: a table, a TRL/verl/TensorBoard/MLflow/W&B log) at every poll, and for
each new evaluation prints the forecast final competence of every agent with its 90 %
interval and P(collapse), P(oscillation) (:mod:`calibrate._watch`; with a pilots' fit,
``--update weights`` importance-weights new-run draws solved once, ``--update laplace``
refits the run's own parameters at every evaluation); when P(collapse) reaches
``--threshold`` it prints an ``ALERT`` line and exits with status 3. ``--once`` forecasts
from what is there and exits (0, or 3 on alert); ``--until-finished`` stops when the run's
manifest says ``finished`` or ``diverged``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np

from .._config import ConfigError
from .._curve_data import DataError

__all__ = ["ALERT_STATUS", "add_watch_parser", "watch"]

ALERT_STATUS = 3  # exit status when P(collapse) reaches the threshold
MIN_SELF_FIT = 3  # evaluations before the run's own fit is tried


def add_watch_parser(sub: Any) -> None:
    """Add the ``watch`` subcommand to the subparsers ``sub``."""
    w = sub.add_parser("watch", help="follow a running job: forecast and early warning")
    w.add_argument("run", help="a run folder (or any input `fit` reads) that is being written")
    w.add_argument(
        "--fit",
        default=None,
        help="a pilots' fit folder (`calibrate fit`); without it the run's own evaluations "
        "are fitted (Laplace, --motif/--gate) at each new evaluation",
    )
    w.add_argument("--threshold", type=float, default=0.5, help="alert at P(collapse) >= this")
    w.add_argument("--poll", type=float, default=30.0, help="seconds between reads")
    w.add_argument("--once", action="store_true", help="forecast from what is there and exit")
    w.add_argument(
        "--until-finished",
        action="store_true",
        help="stop when the manifest says finished or diverged (run folders)",
    )
    w.add_argument("--json", action="store_true", help="one JSON object per forecast")
    w.add_argument("--steps", type=float, default=None, help="horizon (default: config steps)")
    w.add_argument("--draws", type=int, default=200, help="posterior draws used")
    w.add_argument("--replicates", type=int, default=4, help="new-run effects per draw")
    w.add_argument("--spread", type=float, default=0.3, help="sd of the run-effect jitter")
    w.add_argument("--misfit", type=float, default=0.05, help="model-misfit sd of a competence")
    w.add_argument(
        "--model-only",
        action="store_true",
        help="P(collapse) from the model's draws alone (default: an agent that has already "
        "collapsed by the one rule for real runs counts as collapsed)",
    )
    w.add_argument(
        "--extrapolation-sd",
        type=float,
        default=0.0,
        metavar="S",
        help="with --fit and --update weights: let each link bend beyond the pilots' range "
        "by a slope change of sd S, as `predict --extrapolation-sd` (default 0: straight)",
    )
    w.add_argument(
        "--update",
        default="weights",
        help="with --fit, how the forecast meets the evaluations: 'weights' (importance "
        "weights of new-run draws solved once) or 'laplace' (the run's own parameters "
        "refitted at every evaluation, fresh draws of that posterior solved)",
    )
    w.add_argument(
        "--signal-rule",
        default=None,
        help="a fitted early-warning rule on the run's training signals (JSON from `calibrate "
        "signal-rule`): alert also when it fires, naming the agent, signal and indicator",
    )
    w.add_argument("--motif", default="C1", help="without --fit: the network fitted")
    w.add_argument("--gate", default="AND", help="without --fit: its gate")
    w.add_argument("--agent", action="append", default=[], metavar="AGENT=KEY")
    w.add_argument("--agent-regex", action="append", default=[], metavar="REGEX")
    w.add_argument("--n-eval", action="append", default=[], metavar="N|AGENT=N")
    w.add_argument("--covariate", action="append", default=[], metavar="NAME=KEY")
    w.add_argument("--force-key", action="store_true", help="as fit's --force-key")
    w.add_argument("--seed", type=int, default=0)


def _check(args: argparse.Namespace) -> None:
    if not (np.isfinite(args.threshold) and 0 < args.threshold <= 1):
        raise ConfigError(f"--threshold must be in (0, 1], got {args.threshold!r}")
    if not (np.isfinite(args.poll) and args.poll > 0):
        raise ConfigError(f"--poll must be a number of seconds > 0, got {args.poll!r}")
    if args.steps is not None and not (np.isfinite(args.steps) and args.steps > 0):
        raise ConfigError(f"--steps must be > 0, got {args.steps!r}")
    if not Path(args.run).exists():
        raise DataError(f"{args.run}: no such run folder or file")
    if args.fit is not None and not Path(args.fit).is_dir():
        raise ConfigError(f"--fit {args.fit}: no such fit folder")
    from ._update import UPDATES

    if args.update not in UPDATES:
        raise ConfigError(f"--update must be one of {list(UPDATES)}, got {args.update!r}")
    if args.update != "weights" and args.fit is None:
        raise ConfigError(f"--update {args.update} needs --fit (a pilots' fit)")
    sd = args.extrapolation_sd
    if not (np.isfinite(sd) and sd >= 0):
        raise ConfigError(f"--extrapolation-sd must be a finite number >= 0, got {sd!r}")
    if sd > 0 and (args.fit is None or args.update != "weights"):
        raise ConfigError("--extrapolation-sd needs --fit and --update weights")


def _read(args: argparse.Namespace):
    """The run's data (one run; None while a run folder has no evaluation yet), its
    manifest status and agents (None and [] without a manifest)."""
    from .._data import load_inputs
    from .._importers import KeyMapping

    status, agents = None, []
    folder = Path(args.run)
    if (folder / "manifest.json").is_file():
        from llm_runs.runlog import RunLogError, read_manifest

        try:
            m = read_manifest(folder)
        except RunLogError as err:
            raise DataError(str(err)) from None
        status, agents = m.get("status"), list(m.get("agents") or [])
        log = folder / "competence.jsonl"
        if not log.is_file() or b"\n" not in log.read_bytes():
            return None, status, agents
    mapping = KeyMapping.from_options(
        args.agent, args.agent_regex, args.n_eval, args.covariate, force=args.force_key
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a torn last line: a run being written
        data = load_inputs([args.run], mapping=mapping)
    if len(data.runs) != 1:
        raise DataError(f"{args.run}: watch follows one run; this holds {len(data.runs)}")
    return data, status, agents


def _horizon(args: argparse.Namespace, data, post) -> float:
    if args.steps is not None:
        return float(args.steps)
    run = data.runs[0]
    if "steps" in data.hyper.columns and np.isfinite(float(data.hyper.loc[run, "steps"])):
        return float(data.hyper.loc[run, "steps"])
    if post is not None:
        return float(post.model.ts[-1])
    return 2.0 * float(data.table["step"].max())


def _run_n_eval(data, nodes) -> dict[str, int]:
    """The run's median ``n_eval`` per agent that is a node of the fit (others: the fit's)."""
    t = data.table
    med = t[t["agent"].isin(list(nodes))].groupby("agent")["n_eval"].median()
    return {str(a): max(1, round(float(n))) for a, n in med.items() if np.isfinite(n)}


class _Watcher:
    """State across polls: the prepared draws (pilots' fit) and what was printed."""

    def __init__(self, args: argparse.Namespace):
        import jax

        self.args = args
        self.key = jax.random.key(args.seed)
        self.post = None
        if args.fit is not None:
            from .._posterior import load_fit

            self.post = load_fit(args.fit)
        self.draws = None
        self.last_step: int | None = None
        self.seen_status: str | None = None
        self.described = False
        self.note: str | None = None
        self.say = (lambda s: print(s, file=sys.stderr)) if args.json else print
        self.rule = None
        if args.signal_rule is not None:
            from .._warning._watch import load_rule

            self.rule = load_rule(args.signal_rule)

    def _prepare(self, data):
        from ._core import WatchDraws, prepare, run_setting

        horizon = _horizon(self.args, data, self.post)
        assert self.post is not None
        setting, missing = run_setting(self.post, data.hyper.loc[data.runs[0]].to_dict())
        self.draws = prepare(
            self.post, setting, steps=horizon, draws=self.args.draws,
            replicates=self.args.replicates, spread=self.args.spread, key=self.key,
            n_eval=_run_n_eval(data, self.post.model.network.names), update=self.args.update,
            extrapolation_sd=self.args.extrapolation_sd,
        )  # fmt: skip
        at = ", ".join(f"{k}={v:g}" for k, v in setting.items()) or "the pilots' reference"
        how = (
            f"{self.draws.curves.shape[0]} new-run draws to step {horizon:g}, "
            "importance-weighted on the run's evaluations as they arrive"
            if isinstance(self.draws, WatchDraws)
            else f"the run's parameters refitted (Laplace) at each evaluation, "
            f"{self.draws.draws} draws to step {horizon:g}"
        )
        self.say(f"watching {self.args.run} with the pilots' fit {self.args.fit} at {at}: {how}")
        for f in missing:
            self.say(f"note: the run does not record {f}; predicted at the pilots' reference")

    def _self_draws(self, data, obs, agents):
        from ._core import self_fit

        network = f"{self.args.motif}-{self.args.gate}"
        nodes = agents or sorted(obs["agent"].unique())
        return self_fit(
            obs, network, steps=_horizon(self.args, data, None), nodes=nodes,
            draws=self.args.draws, key=self.key,
        )  # fmt: skip

    def poll(self) -> tuple[bool, str | None]:
        """Read the run, print a forecast per new evaluation; (alerted, manifest status)."""
        from ._core import forecast

        data, status, agents = _read(self.args)
        if data is None:
            return False, status
        t = data.table
        run_status = data.status.get(data.runs[0], {})  # an imported log's, counted
        if not self.described and data.sources is not None:
            from .._cli_inputs import describe_inputs  # once: what each key means

            self.described = True
            for line in describe_inputs(data):
                self.say(line)
        if run_status.get("status") not in (None, "finished", self.seen_status):
            self.seen_status = run_status["status"]
            self.say(f"run status: {run_status['status']} ({run_status.get('reason')})")
        steps = sorted(set(t["step"].tolist()))
        new = [s for s in steps if self.last_step is None or s > self.last_step]
        if self.args.once:
            new = new[-1:]
        if not new:
            return False, status
        if self.post is None:  # the run's own fit, on everything there is
            new = new[-1:]
            if len(steps) < MIN_SELF_FIT:
                self.say(f"step {steps[-1]}: {len(steps)} evaluation(s); the run's own fit "
                         f"starts at {MIN_SELF_FIT}")  # fmt: skip
                self.last_step = steps[-1]
                return False, status
            if self.last_step is None:
                self.say(f"no --fit: fitting the run's own evaluations (Laplace, "
                         f"{self.args.motif}-{self.args.gate}) at each new evaluation")  # fmt: skip
            self.draws = self._self_draws(data, t, agents)
        elif self.draws is None:
            self._prepare(data)
        assert self.draws is not None
        if self.draws.band_note != self.note:  # once: what the intervals hold
            self.note = self.draws.band_note
            self.say(f"interval: 90 % of {self.note}")
        alerted = False
        signals = None
        if self.rule is not None:
            from .._warning._watch import run_signals, signal_alert

            signals = run_signals(self.args.run, data)
        for s in new:
            fc = forecast(self.draws, t[t["step"] <= s], misfit=self.args.misfit,
                          observed=not self.args.model_only)  # fmt: skip
            sig = signal_alert(signals, self.rule, int(s)) if self.rule is not None else None
            alert = fc.p_collapse >= self.args.threshold or sig is not None
            alerted = alerted or alert
            if self.args.json:
                row = {"run": data.runs[0], **fc.to_dict(), "alert": alert,
                       "threshold": self.args.threshold, "source": self.draws.source,
                       "run_status": run_status.get("status"),
                       "signal_alert": None if sig is None else sig.__dict__}  # fmt: skip
                print(json.dumps(row, allow_nan=False, default=float), flush=True)
            else:
                print(fc.line(), flush=True)
            if alert:
                seen = fc.observed_collapse
                why = f" (collapsed so far: {', '.join(seen)})" if seen else ""
                if fc.p_collapse >= self.args.threshold:
                    print(f"ALERT: step {fc.step}: P(collapse) {fc.p_collapse:.2f} >= "
                          f"{self.args.threshold:g}{why}", file=sys.stderr, flush=True)  # fmt: skip
                if sig is not None:
                    print(f"ALERT: signals: {sig.words()}", file=sys.stderr, flush=True)
                if not self.args.once:
                    self.last_step = s
                    return True, status
        self.last_step = new[-1]
        return alerted, status


def watch(args: argparse.Namespace) -> int:
    """Run ``calibrate watch``; the exit status (0, or 3 after an alert)."""
    from llm_runs import writer_gone
    from llm_runs.runlog import is_terminal

    _check(args)
    watcher = _Watcher(args)
    if args.until_finished and not (Path(args.run) / "manifest.json").is_file():
        raise ConfigError("--until-finished needs a run folder (its manifest's status)")
    try:
        while True:
            alerted, status = watcher.poll()
            if alerted:
                return ALERT_STATUS
            if args.once:
                if watcher.last_step is None:  # nothing to forecast from: say so, not exit 0
                    raise DataError(f"{args.run} has no evaluations yet: nothing to forecast "
                                    "(watch it without --once to wait for them)")  # fmt: skip
                return 0
            if args.until_finished and is_terminal(status):
                watcher.say(f"the run is {status}: stopping")
                return 0
            if args.until_finished and (gone := writer_gone(args.run)) is not None:
                raise DataError(f"{args.run} is {status or 'not finished'} but {gone}: it "
                                "will never finish; stopping (resume it with llm_runs train "
                                "--resume)")  # fmt: skip
            time.sleep(args.poll)
    except KeyboardInterrupt:
        return 130
