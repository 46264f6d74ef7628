"""The style rule "modules < 400 lines", for the three packages and the paper drivers."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LIMIT = 400


def test_every_module_is_under_400_lines():
    long = [
        f"{p.relative_to(ROOT)}: {n} lines"
        for d in ("simulate", "calibrate", "llm_runs", "paper")
        for p in sorted((ROOT / d).rglob("*.py"))
        if (n := len(p.read_text(encoding="utf-8").splitlines())) >= LIMIT
    ]
    assert not long, "split these modules (< 400 lines each):\n" + "\n".join(long)
