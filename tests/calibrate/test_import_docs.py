"""docs/runlog.md's worked examples (issue 70 §5), run as written on logs the tests write in
each framework's shape: the dry runs (fast), then the fits, forecast and watch (slow)."""

import os
import re
import shlex
from pathlib import Path

import pytest

from calibrate.__main__ import main

from . import log_shapes as ls

DOC = Path(__file__).resolve().parents[2] / "docs" / "runlog.md"


def _commands() -> list[list[str]]:
    """Each ``python -m calibrate ...`` of the worked examples, as argv after the module."""
    text = DOC.read_text(encoding="utf-8")
    section = text[text.index("### Worked examples, one per framework") :]
    blocks = re.findall(r"```bash\n(.*?)```", section, flags=re.S)
    out = []
    for block in blocks:
        for line in block.replace("\\\n", " ").splitlines():
            if line.strip().startswith("python -m calibrate "):
                out.append(shlex.split(line)[3:])
    return out


def _run(tmp_path, argv, capsys) -> str:
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        rc = main(argv)
    finally:
        os.chdir(cwd)
    out, err = capsys.readouterr()
    assert rc == 0, (argv, err[-2000:])
    return out


def test_the_docs_hold_the_worked_examples():
    cmds = _commands()
    assert sum("--dry-run" in c for c in cmds) == 6 and len(cmds) == 10


def test_worked_dry_runs_as_written(tmp_path, capsys):
    ls.write_all(tmp_path)
    outs = [_run(tmp_path, c, capsys) for c in _commands() if "--dry-run" in c]
    assert "grpo-gsm8k X <- rewards/correctness_reward/mean: range [0, 2]; n_eval from " in outs[0]
    assert "grpo-gsm8k: truncated (the log ends at step 60 of 100)" in outs[0]
    assert "grpo-old X <- rewards/correctness_reward: range [0, 2]; n_eval from --n-eval" in outs[1]
    assert "ppo: diverged (non-finite actor/pg_loss at step 6)" in outs[2]
    assert "n_eval from data.val_max_samples 200; each value: evaluation at step" in outs[2]
    assert "agents ['judge', 'solver', 'verifier']" in outs[3]
    assert all("1 run(s)" in o for o in outs[4:])


@pytest.mark.slow
def test_worked_fit_forecast_and_watch_as_written(tmp_path, capsys):
    ls.write_all(tmp_path)
    runs = [c for c in _commands() if "--dry-run" not in c]
    fit, predict, watch, fit3 = (_run(tmp_path, c, capsys) for c in runs)
    assert "range [0, 2]" in fit and (tmp_path / "fit-single" / "inputs.json").is_file()
    assert "X" in predict
    assert "run status: truncated" in watch
    assert "1 run(s), agents ['judge', 'solver', 'verifier']" in fit3
