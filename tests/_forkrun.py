"""Run many commands as their own processes without paying the imports each time.

A server process (this file run as a script) imports what the commands import (JAX, the
three packages, optionally torch) once, then forks one child per command: the child changes
to the command's folder, points its standard output and error at files, runs the command
(``python -m PKG``, ``python -c CODE`` or a script) as ``python`` would, and exits with the
command's status. Each command still runs in a process of its own, so its exit status, its
streams and the files it leaves are its own; only the imports (1.3-2 s of every CLI call on
this machine class) are shared.

JAX must not have started a backend in the server (a fork after that is unsafe), so the
server checks that it has not and fails loudly otherwise.
"""

from __future__ import annotations

import io
import json
import os
import runpy
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path

#: What the server imports once: what the commands import before they check their input.
PRELOAD = ("numpy", "scipy", "jax", "jax.numpy", "equinox", "matplotlib", "matplotlib.pyplot",
           "pandas", "simulate", "calibrate", "llm_runs")  # fmt: skip
#: Added for commands that train (``llm_runs train``).
TORCH = ("torch", "transformers", "peft")


class ForkRunner:
    """A server that runs ``[sys.executable, ...]`` commands by forking (see the module).

    Args:
        env: The commands' environment (the server's own: it is read at import time).
        preload: Modules the server imports before its first fork.
    """

    def __init__(self, env: dict[str, str], preload: tuple[str, ...] = PRELOAD) -> None:
        self._proc = subprocess.Popen(
            [sys.executable, __file__, *preload], env=env, stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, text=True, cwd=Path(__file__).resolve().parents[1],
        )  # fmt: skip
        assert self._proc.stdout is not None
        if self._proc.stdout.readline().strip() != "ready":
            raise RuntimeError(f"the fork server did not start (exit {self._proc.wait()})")

    def run(
        self, argv: list[str], cwd: Path, timeout: float = 300.0
    ) -> subprocess.CompletedProcess:
        """Run ``argv`` (its first item ``sys.executable``) in ``cwd``; stdout and stderr as
        text, as :func:`subprocess.run` with ``capture_output`` and ``text`` gives them."""
        if argv[0] != sys.executable:
            raise ValueError(f"not a python command: {argv[:2]}")
        assert self._proc.stdin is not None and self._proc.stdout is not None
        req = {"argv": argv[1:], "cwd": str(cwd), "timeout": timeout}
        self._proc.stdin.write(json.dumps(req) + "\n")
        self._proc.stdin.flush()
        reply = json.loads(self._proc.stdout.readline())
        return subprocess.CompletedProcess(argv, reply["rc"], reply["stdout"], reply["stderr"])

    def close(self) -> None:
        """Stop the server."""
        if self._proc.stdin is not None:
            self._proc.stdin.close()
        try:
            self._proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self._proc.kill()


def _child(argv: list[str], cwd: str, out: int, err: int) -> int:
    """In the forked child: run ``python ARGV`` in ``cwd`` with its streams on ``out`` and
    ``err``; returns the exit status ``python`` would give."""
    os.chdir(cwd)
    os.dup2(out, 1)
    os.dup2(err, 2)
    sys.stdout = io.TextIOWrapper(os.fdopen(1, "wb", closefd=False), write_through=True)
    sys.stderr = io.TextIOWrapper(os.fdopen(2, "wb", closefd=False), write_through=True)
    sys.stdin = open(os.devnull)
    try:
        if argv[0] == "-c":
            sys.argv, sys.path[0] = ["-c", *argv[2:]], ""
            exec(compile(argv[1], "<string>", "exec"), {"__name__": "__main__"})
        elif argv[0] == "-m":
            sys.argv, sys.path[0] = [argv[1], *argv[2:]], cwd
            runpy.run_module(argv[1], run_name="__main__", alter_sys=True)
        else:
            sys.argv, sys.path[0] = list(argv), os.path.dirname(os.path.abspath(argv[0]))
            runpy.run_path(argv[0], run_name="__main__")
        return 0
    except SystemExit as e:
        if e.code is None or isinstance(e.code, int):
            return e.code or 0
        print(e.code, file=sys.stderr)
        return 1
    except BaseException:
        traceback.print_exc()
        return 1


def _wait(pid: int, timeout: float) -> int:
    """The exit status of child ``pid``, killed after ``timeout`` seconds (then -9)."""
    t0 = time.time()
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status)
        if time.time() - t0 > timeout:
            os.kill(pid, 9)
            os.waitpid(pid, 0)
            return -9
        time.sleep(0.005)


def _serve(preload: list[str]) -> None:
    """The server: one JSON request per line on stdin, one JSON reply per line on stdout."""
    for name in preload:
        __import__(name)
    from jax._src import xla_bridge

    if xla_bridge._backends:
        raise SystemExit("a JAX backend started while preloading: forking would be unsafe")
    replies, sys.stdout = sys.stdout, sys.stderr  # stray prints stay off the replies
    print("ready", file=replies, flush=True)
    for line in sys.stdin:
        req = json.loads(line)
        with tempfile.TemporaryFile() as fo, tempfile.TemporaryFile() as fe:
            sys.stderr.flush()
            pid = os.fork()
            if pid == 0:
                code = 1
                try:
                    code = _child(req["argv"], req["cwd"], fo.fileno(), fe.fileno())
                    sys.stdout.flush()
                    sys.stderr.flush()
                finally:
                    os._exit(code)
            rc = _wait(pid, req["timeout"])
            fo.seek(0)
            fe.seek(0)
            reply = {"rc": rc, "stdout": fo.read().decode(errors="replace"),
                     "stderr": fe.read().decode(errors="replace")}  # fmt: skip
        print(json.dumps(reply), file=replies, flush=True)


if __name__ == "__main__":
    sys.path[0] = os.getcwd()  # the tree, not tests/ (whose calibrate/ is the tests' package)
    _serve(sys.argv[1:])
