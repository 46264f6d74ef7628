"""Run the default test suite as one pytest process per group, ``--lanes`` at a time.

One process per package keeps each process's compiled JAX programs few (a single process
compiling every package's programs crashed inside XLA late in a full run on the 2-core CI
machine); running two groups at once uses both cores, since most tests keep one core busy
(compilation, small solves, single-threaded torch). Each group's output is printed whole
when it ends, with its wall time; the exit status is non-zero if any group failed.

JAX's persistent compilation cache (``~/.cache/agentmotifs/jax``, or
``$AGENTMOTIFS_JAX_CACHE``) is on in every group (``tests/conftest.py``) and in every command
the tests run, as for a user. How warm it is decides most of the time: on 2 quiet cores the
suite took 869 s with the cache of earlier runs and about 1660 s with an empty one
(2026-12-05). ``--cold`` runs against a fresh, empty cache folder (what a new machine sees)
and removes it afterwards.

Usage: python tests/run_groups.py [--lanes N] [--cold] [PYTEST_ARGS...]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: Calibrate modules run in the last group, beside llm_runs (they balance the lanes).
MOVED = (
    "tests/calibrate/test_pulses.py",
    "tests/calibrate/test_predict_speed.py",
    "tests/calibrate/test_importers.py",
)

#: The groups, longest first (so that the lanes end close together). Measured on 2 quiet
#: cores with a warm compilation cache (2026-12-05): top-level 570 s, calibrate 548 s,
#: simulate 313 s, llm_runs + demo 204 s: the run took 861 s, calibrate and simulate in one
#: lane (the other 774 s), so two calibrate modules (~50 s) moved to the last group.
#: With the notebooks' compilation cache (2026-12-06) the top level took ~40 s less, so
#: tests/calibrate/test_importers.py (~15 s) moved to the last group too.
#: Tried and reverted (2026-12-04): the README's and the notebooks' tests as a group of their
#: own (436 s alone, the rest of the top level 292 s) made the run 950 s against 913 s whole.
GROUPS: tuple[tuple[str, ...], ...] = (
    tuple(sorted(str(p.relative_to(ROOT)) for p in (ROOT / "tests").glob("test_*.py"))),
    ("tests/calibrate", *(f"--ignore={m}" for m in MOVED)),
    ("tests/simulate",),
    ("tests/llm_runs", "tests/demo", *MOVED),
)


def _run(
    group: tuple[str, ...], extra: list[str], env: dict[str, str]
) -> tuple[str, int, float, str]:
    paths = [g for g in group if not g.startswith("-")]
    name = "tests/test_*.py" if paths[0].startswith("tests/test_") else " + ".join(paths)
    t0 = time.time()
    with tempfile.TemporaryFile(mode="w+", encoding="utf-8") as fh:
        rc = subprocess.call(
            [sys.executable, "-m", "pytest", "-q", *group, *extra],
            stdout=fh, stderr=subprocess.STDOUT, cwd=ROOT, env=env,
        )  # fmt: skip
        fh.seek(0)
        return name, rc, time.time() - t0, fh.read()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0], allow_abbrev=False)
    ap.add_argument("--lanes", type=int, default=2, help="groups run at once (default 2)")
    ap.add_argument(
        "--cold", action="store_true", help="an empty compilation cache (removed afterwards)"
    )
    a, extra = ap.parse_known_args(argv)
    if a.lanes < 1:
        print(f"error: --lanes must be >= 1, got {a.lanes}", file=sys.stderr)
        return 2
    env = dict(os.environ)
    cold = tempfile.mkdtemp(prefix="jax_cache_") if a.cold else None
    if cold is not None:
        env["AGENTMOTIFS_JAX_CACHE"] = cold
    t0 = time.time()
    failed = []
    try:
        with ThreadPoolExecutor(max_workers=a.lanes) as ex:
            futs = [ex.submit(_run, g, extra, env) for g in GROUPS]
            for f in futs:
                name, rc, dt, out = f.result()
                print(f"== pytest {name}  ({dt:.0f} s, exit {rc})", flush=True)
                print(out, end="", flush=True)
                if rc != 0:
                    failed.append(name)
    finally:
        if cold is not None:
            shutil.rmtree(cold, ignore_errors=True)
    status = f"FAILED: {', '.join(failed)}" if failed else "all groups passed"
    print(f"== {status} in {time.time() - t0:.0f} s ({a.lanes} lane(s))")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
