"""Post hoc: the testbed's wiring read-back (issue 29 §4) refitted with a pipeline gate.

The first read-back (``paper/testbed_study.py``, phase ``fit``; ``wiring_identification`` in
``paper/results/testbed/summary.json``) failed: every set's best type had X->Y ``+``, because
in llm_runs each role's prompt carries its upstream role's sampled output, so Y learns only
once X is competent whatever the designed X->Y sign, and one signed edge cannot hold both that
data-path activation and the designed coupling sign. This is a second model, built after
that result (post hoc, not a preregistered test): ``calibrate fit --pipeline X->Y,Y->Z``
multiplies each pipeline target's learning term by an activating Hill occupancy of its
source (``Kp[X->Y]``, ``m[X->Y]`` free, FitConfig's default priors), on top of each
candidate type's signed regulation.

Design (``config.json``, written before any fit): the testbed's eight committed wiring sets
(its ``config.json``, runs archived in ``<testbed>/runs``), the same runs, sets, links
(rho, delta ~ rl.lr) and options as ``_testbed_analysis.fit_wiring`` (``--motif auto --gate
AND --method laplace``), plus ``--pipeline X->Y,Y->Z``. Measures: those of
``_testbed_analysis.wiring_identification``, with the gate and, read from the testbed's
fits, without it. Each set is fitted once (a set with a ``selection.json`` is kept);
``--no-fit`` writes the summary of the sets fitted so far (``missing_sets``: the rest).

``--quick`` (for tests): a toy testbed of synthetic run logs (one C2 set from the calibrate
model with pipeline gates, at reduced fit sizes) made under ``<out>/quick_testbed``, fitted
without the gate there and with it in ``<out>``.

Usage: python -m paper.archive.wiring_pipeline [--testbed paper/results/testbed]
       [--out paper/results/wiring_pipeline] [--quick] [--no-fit]

Archived (issue 71 §2): kept as the record of ``paper/results/wiring_pipeline/``, part of no
live claim; it still runs as ``python -m paper.archive.wiring_pipeline``, its design and phases
in this module.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]

PIPELINE = "X->Y,Y->Z"
#: The stored design's command, frozen with it (the study runs as ``python -m
#: paper.archive.wiring_pipeline``).
COMMAND = "python paper/wiring_pipeline.py"


def design(testbed: Path, quick: bool) -> dict[str, Any]:
    """What ``config.json`` stores (fixed before any fit)."""
    from calibrate import FitConfig

    pr = FitConfig().priors
    return {
        "post_hoc": True,
        "why": "a second model, built after the first wiring read-back failed (every set's "
        "best type had X->Y '+': Y learns only once X is competent, through the pipeline "
        "data path, in every wiring); not a preregistered test",
        "first_result": "paper/results/testbed/summary.json: wiring_identification",
        "testbed": str(testbed.resolve().relative_to(ROOT))
        if testbed.resolve().is_relative_to(ROOT)
        else str(testbed),
        "sets": "the testbed's wiring sets (its config.json: wiring_types x wiring_sets, "
        "runs at wiring_lrs), as _testbed_analysis.fit_wiring",
        "fit": "calibrate fit --motif auto --gate AND --hierarchy wiring_links.json "
        f"(rho, delta ~ rl.lr) --method laplace --pipeline {PIPELINE}",
        "pipeline": PIPELINE,
        "pipeline_priors": {"Kp": [pr.Kp_median, pr.Kp_sd], "m": [pr.m_median, pr.m_sd]},
        "measures": "_testbed_analysis.wiring_identification: per set true, rank, best, "
        "in_indistinguishable, identified, identified_correct; "
        "truth_first_or_indistinguishable, no_wrong_sign, share_two_signs; with the gate "
        "(this folder) and without it (the testbed's wiring fits)",
        "quick": quick,
        "command": COMMAND + (" --quick" if quick else ""),
    }


def table(summary: dict[str, Any]) -> str:
    """``table.md``: per set, the read-back without and with the gate."""
    new, old = summary["with_pipeline"], summary["without_pipeline"]

    def cell(v: dict[str, Any] | None) -> str:
        if v is None:
            return "not fitted | | "
        ident = ", ".join(
            f"{e} {s}{'' if v['identified_correct'][e] else ' (wrong)'}"
            for e, s in v["identified"].items()
        )
        star = " *" if v["in_indistinguishable"] else ""
        return f"{v['rank']}{star} | {v['best']} | {ident or 'nothing'}"

    lines = [
        "Wiring read-back of the testbed's runs, without and with the pipeline gate "
        f"(--pipeline {PIPELINE}; post hoc). Rank of the true type (* in the "
        "indistinguishable set), the best type, the signs identified.",
        "",
        "| set | true | rank (no gate) | best (no gate) | identified (no gate) "
        "| rank (gate) | best (gate) | identified (gate) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for name in sorted(set(new["sets"]) | set(old["sets"])):
        n, o = new["sets"].get(name), old["sets"].get(name)
        true = (n or o or {}).get("true", "")
        lines.append(f"| {name} | {true} | {cell(o)} | {cell(n)} |")
    lines.append("")
    n_new = len(new["sets"])
    of = f" (gate: over the {n_new} of {n_new + len(summary.get('missing_sets', []))} sets fitted)"
    for key in ("truth_first_or_indistinguishable", "no_wrong_sign", "share_two_signs"):
        lines.append(f"- {key}: no gate {old[key]}, gate {new[key]}{of}")
    if summary.get("missing_sets"):
        lines.append(f"- not fitted yet (with the gate): {', '.join(summary['missing_sets'])}")
    lines += ["", f"Reproduce: `{summary['command']}`", ""]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Fit the sets not yet fitted, then write ``summary.json`` and ``table.md``."""
    from paper import _testbed_analysis as ta
    from paper._testbed_design import StudyConfig
    from simulate import ArgumentParser
    from simulate.common import write_json, write_text

    ap = ArgumentParser(description="The testbed's wiring read-back with a pipeline gate.")
    ap.add_argument("--testbed", default=str(ROOT / "paper/results/testbed"))
    ap.add_argument("--out", default=str(ROOT / "paper/results/wiring_pipeline"))
    ap.add_argument("--quick", action="store_true", help="a toy synthetic testbed, for tests")
    ap.add_argument(
        "--no-fit", action="store_true", help="only the summary of the sets fitted so far"
    )
    a = ap.parse_args(argv)
    out, testbed = Path(a.out), Path(a.testbed)
    testbed = out / "quick_testbed" if a.quick else testbed
    want = design(testbed, a.quick)
    cfg_path = out / "config.json"
    if cfg_path.is_file():
        if json.loads(cfg_path.read_text()) != json.loads(json.dumps(want)):
            print(f"error: {cfg_path} holds another design; use another --out", file=sys.stderr)
            return 2
    else:
        write_json(cfg_path, want)
    extra: tuple[str, ...] = ()
    if a.quick and not a.no_fit:
        from paper._wiring_quick import quick_testbed

        testbed, extra = quick_testbed(testbed)
    cfg = StudyConfig(**json.loads((testbed / "config.json").read_text()))
    cfg.bind(testbed)
    t0 = time.perf_counter()
    if not a.no_fit:
        ta.fit_wiring(
            cfg, testbed / "runs", out, extra=("--pipeline", PIPELINE, *extra), logs=out / "logs"
        )
    timing = {}
    for name in sorted((out / "wiring").glob("*/selection.json")):
        timing[name.parent.name] = json.loads(name.read_text())["timing_s"]["total_s"]
    summary = {
        "post_hoc": True,
        "pipeline": PIPELINE,
        "with_pipeline": ta.wiring_identification(cfg, out),
        "without_pipeline": ta.wiring_identification(cfg, testbed),
        "missing_sets": [n for n in ta._wiring_sets(cfg) if n not in timing],
        "fit_seconds": timing,
        "this_call_seconds": time.perf_counter() - t0,
        "command": want["command"],
    }
    write_json(out / "summary.json", summary)
    write_text(out / "table.md", table(summary))
    print(table(summary))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
