"""Regenerate the paper's figures and ``numbers.tex``, then build ``main.pdf`` if LaTeX is here.

Every stage is a script in ``paper/figures/``; ``numbers`` reads their JSON and the committed
results under ``paper/results/`` and writes ``paper/numbers.tex`` (never typed by hand).

    python -m paper.make_figures                 # the paper's sizes (what `make paper` runs)
    python -m paper.make_figures --toy           # small sizes, into runs/paper_toy (tests)
    python -m paper.make_figures --only oscillation,numbers --out /tmp/f --numbers /tmp/n.tex
    python -m paper.make_figures --pdf           # then latexmk (or pdflatex + bibtex)
    python -m paper.make_figures --with-training # also retrain the C1/I1 runs (~10 min) and
                                                 # recalibrate them (figure stages llm, calibration)

Without a LaTeX toolchain ``--pdf`` prints which Debian packages provide one and exits 0:
the figures and numbers are still regenerated.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import simulate

HERE = Path(__file__).resolve().parent
FIGS = HERE / "figures"
DEFAULT = ("presets", "oscillation", "phase", "numbers")
TRAINING = ("llm", "calibration")
LATEX_PACKAGES = "latexmk texlive-latex-base texlive-latex-recommended"


def commands(figures: Path, numbers: Path, toy: bool) -> dict[str, list[str]]:
    """Stage name -> command line (run from the repository root)."""
    py = sys.executable
    runs = figures / "runs"
    size = ["--toy"] if toy else []
    return {
        "presets": [py, "-m", "paper.figures.fig_presets", "--out", str(figures), *size],
        "oscillation": [
            py,
            "-m",
            "paper.figures.fig_oscillation",
            "--out",
            str(figures / "oscillation.png"),
            *size,
        ],
        "phase": [py, "-m", "paper.figures.fig_phase", "--out", str(figures / "phase"), *size],
        "numbers": [
            py,
            "-m",
            "paper.figures.tex_numbers",
            "--figures",
            str(figures),
            "--out",
            str(numbers),
        ],
        "llm": [
            py,
            "-m",
            "paper.llm_c1_vs_i1",
            "--runs",
            str(runs),
            "--steps",
            "20" if toy else "400",
            "--out",
            str(figures / "llm_c1_vs_i1.png"),
        ],
        "calibration": [
            py,
            "-m",
            "paper.figures.fig_calibration",
            "--runs",
            str(runs),
            "--out",
            str(figures / "calibration"),
            *size,
        ],
    }


def latex_commands(tex: Path) -> list[list[str]] | None:
    """The commands that build ``tex`` into a PDF with the toolchain found on PATH, or None."""
    if os.environ.get("AGENTMOTIFS_NO_LATEX"):  # tests: behave as on a machine without LaTeX
        return None
    name = tex.stem
    if shutil.which("latexmk") and shutil.which("pdflatex"):
        return [["latexmk", "-pdf", "-interaction=nonstopmode", "-halt-on-error", tex.name]]
    if shutil.which("pdflatex") and shutil.which("bibtex"):
        pdf = ["pdflatex", "-interaction=nonstopmode", "-halt-on-error", tex.name]
        return [pdf, ["bibtex", name], pdf, pdf]
    return None


def build_pdf(tex: Path) -> int:
    """Build the PDF next to ``tex``; without LaTeX say what to install and return 0."""
    cmds = latex_commands(tex)
    if cmds is None:
        print(
            "== pdf: skipped, no LaTeX toolchain (latexmk, or pdflatex + bibtex) on PATH.\n"
            "   The figures and numbers.tex are regenerated. For the PDF, on Debian/Ubuntu:\n"
            f"   sudo apt-get install {LATEX_PACKAGES}\n"
            f"   then run `make paper` again (or: cd {tex.parent} && latexmk -pdf {tex.name}).",
            flush=True,
        )
        return 0
    for cmd in cmds:
        print(f"== pdf: {' '.join(cmd)}", flush=True)
        r = subprocess.run(cmd, cwd=tex.parent, check=False, capture_output=True, text=True)
        if r.returncode != 0:
            print(r.stdout[-3000:], file=sys.stderr)
            log = tex.with_suffix(".log")
            print(f"error: {cmd[0]} failed (exit {r.returncode}); see {log}", file=sys.stderr)
            return 1
    print(f"   pdf: {tex.with_suffix('.pdf')}", flush=True)
    return 0


def main(argv: list[str] | None = None) -> int:
    """Run the selected stages in order; stop at the first failure."""
    ap = simulate.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument(
        "--out", default=None, help="figures folder (default paper/figures; --toy: runs/paper_toy)"
    )
    ap.add_argument("--numbers", default=None, help="numbers.tex path (default paper/numbers.tex)")
    ap.add_argument("--toy", "--quick", action="store_true", help="small sizes (tests)")
    ap.add_argument("--only", default="", help="comma-separated stages")
    ap.add_argument("--with-training", action="store_true", help="also stages llm, calibration")
    ap.add_argument("--pdf", action="store_true", help="build paper/main.pdf if LaTeX is here")
    args = ap.parse_args(argv)
    # toy sizes never overwrite the paper's committed figures and numbers unless asked to
    toy_dir = HERE.parent / "runs" / "paper_toy"
    figures = Path(args.out) if args.out else (toy_dir if args.toy else FIGS)
    numbers = (
        Path(args.numbers)
        if args.numbers
        else (figures / "numbers.tex" if args.toy else HERE / "numbers.tex")
    )
    cmds = commands(figures, numbers, args.toy)
    default = [*DEFAULT[:-1], *(TRAINING if args.with_training else ()), DEFAULT[-1]]
    chosen = [c for c in args.only.split(",") if c] or default
    unknown = [c for c in chosen if c not in cmds]
    if unknown:
        print(f"error: unknown figure {unknown[0]!r}; choose from {list(cmds)}", file=sys.stderr)
        return 2
    figures.mkdir(parents=True, exist_ok=True)
    for name in chosen:
        t0 = time.perf_counter()
        print(f"== {name}: {' '.join(cmds[name][1:])}", flush=True)
        r = subprocess.run(cmds[name], check=False, cwd=HERE.parent)
        if r.returncode != 0:
            print(f"error: figure {name} failed (exit {r.returncode})", file=sys.stderr)
            return r.returncode
        print(f"   {name} done in {time.perf_counter() - t0:.0f} s", flush=True)
    if args.pdf:
        if numbers.resolve() != (HERE / "numbers.tex").resolve():
            print(f"== pdf: skipped, main.tex reads paper/numbers.tex, not {numbers}", flush=True)
            return 0
        return build_pdf(HERE / "main.tex")
    return 0


if __name__ == "__main__":
    sys.exit(main())
