"""The committed results stay light (issue 71 §4).

``paper/results/`` keeps what cannot be regenerated cheaply: designs, stored forecasts, run
logs, summaries, tables and the figures the README and paper show. It does not keep what a
committed command derives from them: each fit's figures (``predictive.png``,
``selection.png``) and the data copies and config dumps of a selection's candidate fits
(``fits/LABEL/data.parquet``, ``config.json``, ``network.json``, ``run_configs.json``,
``links.json``; the single ``fit/`` folders keep theirs, which some studies' summaries read).
``.gitignore`` holds the same rules, so a study rerun does not re-commit them.

The checks read ``git ls-files`` and stat the tracked files (about 8,000): well under a
second.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
RESULTS = "paper/results"

#: Tracked paths that a committed command derives (checked against each tracked path).
DERIVED = (
    re.compile(r"/predictive\.png$"),
    re.compile(r"/selection\.png$"),
    re.compile(
        r"/fits/[^/]+/(data\.parquet|config\.json|network\.json|run_configs\.json|links\.json)$"
    ),
)

#: The issue's goals for ``paper/results/`` in the working tree.
MAX_FILES = 8000
GOAL_MB = 60.0
#: The ceiling while the goal above is not met: 79.1 MB after the derived files went (from
#: 281.7 MB; run logs 30 MB, stored forecasts 16 MB, fit summaries 13.5 MB, none of them
#: derived), 86 MB with demo_heldout's stored forecasts (7 MB).
MAX_MB = 100.0


def _tracked() -> list[str]:
    """Paths under ``paper/results`` in git's index (skips outside a git checkout)."""
    try:
        out = subprocess.run(
            ["git", "ls-files", "-z", "--", RESULTS],
            cwd=ROOT,
            capture_output=True,
            check=True,
        ).stdout
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("not a git checkout")
    return [p for p in out.decode().split("\0") if p]


def _megabytes(paths: list[str]) -> float:
    """Total size of the tracked files present in the working tree, in MB (10^6 bytes)."""
    total = 0
    for p in paths:
        f = ROOT / p
        if f.is_file():
            total += f.stat().st_size
    return total / 1e6


def test_no_derived_file_is_tracked() -> None:
    bad = [p for p in _tracked() if any(rx.search(p) for rx in DERIVED)]
    assert not bad, f"{len(bad)} derived files tracked, e.g. {bad[:5]}: git rm them"


def test_derived_files_are_ignored() -> None:
    """A study rerun writes them again: .gitignore keeps them out of ``git add``."""
    probes = [
        f"{RESULTS}/x/fit/predictive.png",
        f"{RESULTS}/x/wiring/s/selection.png",
        *(f"{RESULTS}/x/wiring/s/fits/C1-AND/{n}" for n in
          ("data.parquet", "config.json", "network.json", "run_configs.json", "links.json")),
    ]  # fmt: skip
    kept = [f"{RESULTS}/x/fit/data.parquet", f"{RESULTS}/x/wiring/s/fits/C1-AND/summary.json"]
    try:
        res = subprocess.run(
            ["git", "check-ignore", "--no-index", "--stdin"],
            cwd=ROOT,
            input="\n".join(probes + kept),
            capture_output=True,
            text=True,
        )
    except OSError:
        pytest.skip("git not available")
    if res.returncode > 1:  # 0: some ignored, 1: none; 128: not a git checkout
        pytest.skip("not a git checkout")
    ignored = set(res.stdout.split())
    assert ignored == set(probes), (sorted(set(probes) - ignored), sorted(ignored - set(probes)))


def test_derived_patterns_match_what_they_should() -> None:
    """The patterns of this test against paths written by hand."""
    derived = [
        "paper/results/forecast/fit/predictive.png",
        "paper/results/testbed/wiring/I1_set0/selection.png",
        "paper/results/testbed/wiring/I1_set0/fits/C1-AND/data.parquet",
        "paper/results/testbed/wiring/I1_set0/fits/C1-AND/run_configs.json",
    ]
    kept = [
        "paper/results/forecast/fit/data.parquet",
        "paper/results/forecast/fit/config.json",
        "paper/results/forecast/config.json",
        "paper/results/testbed/wiring/I1_set0/fits/C1-AND/summary.json",
        "paper/results/testbed/wiring/I1_set0/fits/C1-AND/diagnostics.json",
        "paper/results/testbed/runs/a/competence.jsonl",
        "paper/results/testbed/testbed.png",
    ]
    assert all(any(rx.search(p) for rx in DERIVED) for p in derived)
    assert not any(any(rx.search(p) for rx in DERIVED) for p in kept)


def test_results_within_budget() -> None:
    paths = _tracked()
    assert len(paths) <= MAX_FILES, f"{len(paths)} files under {RESULTS} (at most {MAX_FILES})"
    mb = _megabytes(paths)
    assert mb <= MAX_MB, f"{mb:.1f} MB under {RESULTS} (at most {MAX_MB})"


@pytest.mark.xfail(strict=True, reason="~80 MB of run logs, stored forecasts and summaries")
def test_results_meet_the_size_goal() -> None:
    """The issue's goal (60 MB). Not met: what is left is not derived. Strict: drop the
    marker when it holds."""
    assert _megabytes(_tracked()) <= GOAL_MB
