"""Run many commands as their own processes without paying the imports each time.

A server process imports what the commands import (JAX, the three packages, torch) once,
then forks one child per command: the child changes to the command's folder, points its
standard output and error at files, runs the command (``python -m PKG``, ``python -c CODE``
or a script) as ``python`` would, and exits with the command's status. Each command still runs in
a process of its own, so its exit status, its stderr and the files it leaves are its own;
only the imports (1.3-2 s of every CLI call on this machine class) are shared.

JAX must not have started a backend in the server (a fork after that is unsafe), so the
server checks that it has not and fails loudly otherwise.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

_SERVER = r"""
import io, json, os, runpy, sys, tempfile, time, traceback
for name in PRELOAD:
    __import__(name)
from jax._src import xla_bridge
if xla_bridge._backends:
    raise SystemExit("a JAX backend started while preloading: forking would be unsafe")
out = sys.stdout
sys.stdout = sys.stderr
print("ready", file=out, flush=True)
for line in sys.stdin:
    req = json.loads(line)
    argv, cwd, timeout = req["argv"], req["cwd"], req["timeout"]
    fo, eo = tempfile.TemporaryFile(), tempfile.TemporaryFile()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            os.chdir(cwd)
            os.dup2(fo.fileno(), 1)
            os.dup2(eo.fileno(), 2)
            sys.stdout = io.TextIOWrapper(os.fdopen(1, "wb", closefd=False), write_through=True)
            sys.stderr = io.TextIOWrapper(os.fdopen(2, "wb", closefd=False), write_through=True)
            sys.stdin = open(os.devnull)
            try:
                if argv[0] == "-c":
                    sys.argv = ["-c", *argv[2:]]
                    sys.path[0] = ""
                    exec(compile(argv[1], "<string>", "exec"), {"__name__": "__main__"})
                elif argv[0] == "-m":
                    sys.argv = [argv[1], *argv[2:]]
                    sys.path[0] = cwd
                    runpy.run_module(argv[1], run_name="__main__", alter_sys=True)
                else:
                    sys.argv = list(argv)
                    sys.path[0] = os.path.dirname(os.path.abspath(argv[0]))
                    runpy.run_path(argv[0], run_name="__main__")
                code = 0
            except SystemExit as e:
                if e.code is None:
                    code = 0
                elif isinstance(e.code, int):
                    code = e.code
                else:
                    print(e.code, file=sys.stderr)
                    code = 1
            except BaseException:
                traceback.print_exc()
                code = 1
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code)
    t0, rc = time.time(), None
    while rc is None:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            rc = os.waitstatus_to_exitcode(status)
        elif time.time() - t0 > timeout:
            os.kill(pid, 9)
            os.waitpid(pid, 0)
            rc = -9
        else:
            time.sleep(0.005)
    fo.seek(0)
    eo.seek(0)
    reply = {"rc": rc, "stdout": fo.read().decode(errors="replace"),
             "stderr": eo.read().decode(errors="replace")}
    print(json.dumps(reply), file=out, flush=True)
"""


class ForkRunner:
    """A server that runs ``[sys.executable, ...]`` commands by forking (see the module).

    Args:
        env: The commands' environment (the server's own: it is read at import time).
        preload: Modules the server imports before its first fork.
    """

    def __init__(self, env: dict[str, str], preload: tuple[str, ...]) -> None:
        code = f"PRELOAD = {list(preload)!r}\n{_SERVER}"
        self._proc = subprocess.Popen(
            [sys.executable, "-c", code], env=env, stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, text=True, cwd=Path(__file__).resolve().parents[1],
        )  # fmt: skip
        assert self._proc.stdout is not None
        first = self._proc.stdout.readline()
        if first.strip() != "ready":
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
