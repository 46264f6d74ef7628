"""The README's quickstart and Python examples run as written (with tiny sizes).

As numpyro's ``test_examples`` runs its example scripts with small flags, this test takes the
``bash`` block under "Quickstart" from README.md, runs every command in order in a temporary
folder (``llm_runs train`` gets a micro base and a few steps appended as ``--set`` overrides,
which take precedence over the README's flags), then executes the README's Python examples
there. Each command runs in a process of its own, forked from a server that imported the
packages once (``tests/_forkrun.py``). A command that fails, or an output the loop promises
that is missing, fails the test.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import sys
from pathlib import Path

import pytest

from tests._forkrun import PRELOAD, TORCH, ForkRunner

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"

#: Overrides appended to every ``llm_runs train`` line: micro base, a few steps.
TINY_TRAIN = [
    "model.preset=micro",
    "model.pretrain_steps=30",
    "model.pretrain_batch=32",
    "task.n_probe=8",
    "task.n_test=8",
    "rl.batch=8",
    "rl.warmup_steps=2",
    "rl.warmup_batch=8",
    "steps=12",
    "eval_every=3",
    "ckpt_every=4",
    "threads=1",
]


#: The train flags that TINY_TRAIN's fields replace (a flag and ``--set`` of its field together
#: are refused as a conflict).
TINY_FLAGS = ("--steps", "--eval-every")


def _without_flags(argv: list[str], flags: tuple[str, ...]) -> list[str]:
    """``argv`` without the options ``flags`` and their values (``--steps 100`` or ``=100``)."""
    out, skip = [], False
    for a in argv:
        if skip:
            skip = False
        elif a in flags:
            skip = True
        elif not any(a.startswith(f + "=") for f in flags):
            out.append(a)
    return out


def _section(text: str, heading: str) -> str:
    m = re.search(rf"^## {re.escape(heading)}.*?$(.*?)(?=^## |\Z)", text, re.M | re.S)
    if m is None:
        raise AssertionError(f"README has no section {heading!r}")
    return m.group(1)


def _blocks(text: str, lang: str) -> list[str]:
    return re.findall(rf"^```{lang}\n(.*?)^```", text, re.M | re.S)


def quickstart_commands(text: str) -> list[list[str]]:
    """The quickstart's shell commands as argv lists (continuations joined, comments dropped)."""
    blocks = _blocks(_section(text, "Quickstart"), "bash")
    if len(blocks) != 1:
        raise AssertionError(f"the quickstart should hold one bash block, found {len(blocks)}")
    return _commands(blocks[0])


def _commands(block: str) -> list[list[str]]:
    """Shell commands of a block as argv lists (continuations joined, comments dropped)."""
    joined = block.replace("\\\n", " ")
    cmds = []
    for line in joined.splitlines():
        line = line.split("#", 1)[0].strip() if line.lstrip().startswith("#") else line.strip()
        if line:
            cmds.append(shlex.split(line, comments=True))
    return cmds


def test_quickstart_parses_into_the_loop() -> None:
    """The quickstart is the whole loop: phase → train → fit → recommend → train --config."""
    cmds = quickstart_commands(README.read_text())
    heads = [" ".join(c[:4]) for c in cmds]
    order = [
        "python -m simulate phase",
        "python -m llm_runs train",
        "python -m calibrate fit",
        "python -m calibrate recommend",
        "python -m llm_runs train",
    ]
    collapsed = [h for i, h in enumerate(heads) if i == 0 or h != heads[i - 1]]
    assert collapsed == order, heads
    assert "--config" in cmds[-1], cmds[-1]


def _run_block(block: str, cwd: Path, forks: ForkRunner, cache: Path) -> None:
    for argv in _commands(block):
        assert argv[:2] == ["python", "-m"], argv
        argv = [sys.executable, *argv[1:]]
        if argv[2:4] == ["llm_runs", "train"]:
            argv = _without_flags(argv, TINY_FLAGS)  # train refuses a flag and --set of one field
            argv += [a for kv in TINY_TRAIN for a in ("--set", kv)]
            argv += ["--set", f"model.base_cache={cache}", "--no-progress"]
        proc = forks.run(argv, cwd=cwd, timeout=900)
        assert proc.returncode == 0, (argv, proc.stdout[-2000:], proc.stderr[-4000:])


@pytest.mark.timeout(2400)
def test_quickstart_then_every_example_runs(tmp_path: Path) -> None:
    """The quickstart as written, then every package section's commands and Python examples
    (they use the quickstart's runs), in README order, in one folder."""
    pytest.importorskip("torch")
    pytest.importorskip("peft")
    text = README.read_text()
    cache = tmp_path / "base_cache"
    env = {k: v for k, v in os.environ.items() if k != "JAX_ENABLE_X64"}
    env.update(MPLBACKEND="Agg", AGENTMOTIFS_CACHE=str(cache), PYTHONPATH=str(ROOT))
    (tmp_path / "docs").symlink_to(ROOT / "docs")
    forks = ForkRunner(env, PRELOAD + TORCH)  # each command a process of its own, imports shared
    try:
        _check_readme(text, tmp_path, forks, cache)
    finally:
        forks.close()


def _check_readme(text: str, tmp_path: Path, forks: ForkRunner, cache: Path) -> None:
    _run_block(_blocks(_section(text, "Quickstart"), "bash")[0], tmp_path, forks, cache)
    qs = tmp_path / "runs" / "qs"
    rec = json.loads((qs / "rec" / "recommendation.json").read_text())
    assert rec["param"] == "rl.lr"
    assert (qs / "rec" / "best.yaml").is_file()
    manifest = json.loads((qs / "next" / "manifest.json").read_text())
    assert manifest["config"]["rl"]["lr"] == pytest.approx(rec["value"])
    assert manifest["status"] == "finished"
    for section in ("simulate", "llm_runs", "calibrate"):
        body = _section(text, section)
        for block in _blocks(body, "bash"):
            _run_block(block, tmp_path, forks, cache)
        for code in _blocks(body, "python"):
            proc = forks.run([sys.executable, "-c", code], cwd=tmp_path, timeout=900)
            assert proc.returncode == 0, (section, code, proc.stderr[-4000:])
    assert (tmp_path / "runs" / "phase_all" / "phase.png").is_file()
    assert (tmp_path / "runs" / "curves.png").is_file()
    sel = json.loads((qs / "sel" / "selection.json").read_text())
    assert sel  # the motif selection wrote its ranking


def test_readme_is_a_five_minute_read() -> None:
    """The README is the entry page (<= 150 lines); the rest lives in docs/."""
    n = len(README.read_text().splitlines())
    assert n <= 150, f"README.md has {n} lines (at most 150)"
