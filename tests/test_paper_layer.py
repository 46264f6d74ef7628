"""paper/ is a flat layer over the packages (issue 71 §2), checked statically.

- A *study* is a module of paper/ whose name has no leading underscore (``paper/x.py``,
  ``paper/figures/x.py``, ``paper/archive/x.py``): what ``python -m paper.x`` runs. A
  *helper* is a module whose name starts with ``_``.
- A study imports, of paper/, only helpers: never another study (also not by name, as the
  ``"paper.x:function"`` phases that ``paper/_study.py`` imports when they run).
- A helper imports no study.
- A study imports only its own family's helpers: ``paper._<family>...`` where ``<family>``
  is the first word of the study's name (``wiring_gates`` -> ``paper._wiring*``), plus the
  shared study loop ``paper._study*``; a figure script imports only ``paper.figures._x``.
- No file of paper/ or benchmarks/ changes ``sys.path`` (``python -m paper.x`` from the
  repository root instead).
- No private (``_x``) module of simulate, llm_runs or calibrate is imported from paper/ or
  benchmarks/: tests/test_boundaries.py scans them with the packages.

Known exceptions are listed explicitly below; the test fails when one is fixed and still
listed, so the lists only shrink.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAPER = ROOT / "paper"

#: Importer -> paper module it still imports across the rules above, and why. The list only
#: shrinks.
KNOWN: set[tuple[str, str]] = {
    # reads the testbed study's design and fits its wiring sets again with a pipeline gate
    ("paper.archive.wiring_pipeline", "paper._testbed_analysis"),
    ("paper.archive.wiring_pipeline", "paper._testbed_design"),
    # scores the link-only and the mechanistic model on the old map as the forecast study does
    ("paper.mechanistic_check", "paper._forecast_report"),
    # re-runs the regime map's grid with more seeds
    ("paper.recommend_bench", "paper._regime_design"),
}

#: Helpers every study may import whatever its family: the shared study loop and its runs'
#: record (``paper._study``, ``paper._study_runs``), the study family of every family.
SHARED = "paper._study"


def _files(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*.py") if "results" not in p.relative_to(folder).parts)


def module_name(path: Path) -> str:
    """``paper/figures/tex_numbers.py`` -> ``paper.figures.tex_numbers``."""
    return ".".join(path.relative_to(ROOT).with_suffix("").parts)


def is_study(module: str) -> bool:
    return not module.rsplit(".", 1)[-1].startswith("_")


def family(module: str) -> str:
    """The helper prefix a study may import: ``paper.wiring_gates`` -> ``paper._wiring``;
    ``paper.figures.fig_phase`` -> ``paper.figures._``; an archived study keeps its
    family's live helpers (``paper.archive.forecast_round2`` -> ``paper._forecast``)."""
    parts = module.split(".")
    if parts[1] == "figures":
        return "paper.figures._"
    return f"paper._{parts[-1].split('_')[0]}"


def paper_imports(source: str, modules: set[str], where: str = "") -> set[str]:
    """The paper modules a source imports: import statements anywhere in the file (a
    ``from paper import x`` names module ``paper.x``) and ``"paper.x:function"`` strings."""
    found: set[str] = set()
    tree = ast.parse(source, filename=where)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module, *(f"{node.module}.{a.name}" for a in node.names)]
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            names = re.findall(r"\b(paper(?:\.\w+)+):\w+", node.value)
        else:
            continue
        found |= {n for n in names if n in modules}
    return found


def layer_problems(sources: dict[str, str]) -> list[tuple[str, str, str]]:
    """``(importer, imported, rule)`` for every import of paper/ that breaks a rule."""
    modules = set(sources)
    out = []
    for name, source in sorted(sources.items()):
        for dep in sorted(paper_imports(source, modules, name) - {name}):
            if is_study(dep):
                rule = "imports a study" if is_study(name) else "helper imports a study"
                out.append((name, dep, rule))
            elif is_study(name) and not dep.startswith((SHARED, family(name))):
                out.append((name, dep, f"imports another family's helper (not {family(name)}*)"))
    return out


def _sources() -> dict[str, str]:
    return {module_name(p): p.read_text(encoding="utf-8") for p in _files(PAPER)}


def _key(problem: tuple[str, str, str]) -> tuple[str, str]:
    return problem[0], problem[1]


def test_studies_import_only_their_family_s_helpers():
    new = [p for p in layer_problems(_sources()) if _key(p) not in KNOWN]
    assert not new, "paper/'s layering broken:\n" + "\n".join(f"{a} -> {b}: {r}" for a, b, r in new)


def test_known_exceptions_are_still_there():
    keys = {_key(p) for p in layer_problems(_sources())}
    fixed = sorted(KNOWN - keys)
    assert not fixed, f"fixed; remove from KNOWN in tests/test_paper_layer.py: {fixed}"


def sys_path_problems(source: str, where: str) -> list[str]:
    """``where:line`` of each use of ``sys.path`` in code, or of a string of code handed to
    another interpreter that changes it (``-c "import sys; sys.path.insert(...)"``)."""
    out = []
    for node in ast.walk(ast.parse(source, filename=where)):
        if (
            isinstance(node, ast.Attribute)
            and node.attr == "path"
            and isinstance(node.value, ast.Name)
            and node.value.id == "sys"
        ) or (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and re.search(r"sys\.path\s*(\.insert|\.append|\.extend|\[|\+?=)", node.value)
        ):
            out.append(f"{where}:{node.lineno}")
    return out


def test_no_sys_path_patches_in_paper_or_benchmarks():
    problems = []
    for folder in (PAPER, ROOT / "benchmarks"):
        for p in sorted(folder.rglob("*.py")):
            where = p.relative_to(ROOT).as_posix()
            problems += sys_path_problems(p.read_text(encoding="utf-8"), where)
    assert not problems, "sys.path changed (run as python -m paper.x):\n" + "\n".join(problems)


def test_every_study_runs_as_a_module_of_the_paper_package():
    """No study is run by its path any more: the commands the docs, README, Makefile and
    the studies themselves print are ``python -m paper.x`` (a stored design's command, on a
    line after a comment that says it is frozen with the design, stays as it was stored)."""
    pattern = re.compile(r"python3? paper/[\w/]+\.py")
    texts = [ROOT / "README.md", ROOT / "Makefile", *sorted((ROOT / "docs").glob("*.md"))]
    texts += [p for p in _files(PAPER) if p.suffix == ".py"] + [PAPER / "main.tex"]
    texts += sorted((ROOT / "tests").rglob("*.py"))
    found = []
    for p in texts:
        lines = p.read_text(encoding="utf-8").splitlines()
        for i, line in enumerate(lines):
            if p != Path(__file__) and "frozen" not in " ".join(lines[max(i - 2, 0) : i]):
                found += [f"{p.relative_to(ROOT)}:{i + 1}: {m}" for m in pattern.findall(line)]
    assert not found, "\n".join(found)


# -- the checkers themselves -------------------------------------------------------------

MODULES = {"paper.a_one": "", "paper.a_two": "", "paper._a_help": "", "paper._b_help": "",
           "paper._study": "", "paper.figures.fig_x": "", "paper.figures._tex": ""}  # fmt: skip

SHOULD_FAIL = [
    ("paper.a_one", "from paper.a_two import X\n", "imports a study"),
    ("paper.a_one", "from paper import a_two\n", "imports a study"),
    ("paper.a_one", "def f():\n    import paper.a_two\n", "imports a study"),
    ("paper.a_one", 'STEPS = {"fit": "paper.a_two:fit_phase"}\n', "imports a study"),
    ("paper._a_help", "from paper.a_one import X\n", "helper imports a study"),
    ("paper.a_one", "from paper._b_help import X\n", "another family's helper"),
    ("paper.figures.fig_x", "from paper._a_help import X\n", "another family's helper"),
]

SHOULD_PASS = [
    ("paper.a_one", "from paper._a_help import X\nfrom paper._study import study_main\n"),
    ("paper.a_one", 'STEPS = {"fit": "paper._a_help:fit_phase"}\nimport calibrate\n'),
    ("paper._a_help", "from paper._b_help import X\nfrom paper import _study\n"),
    ("paper.figures.fig_x", "from paper.figures._tex import X\n"),
]


@pytest.mark.parametrize(("name", "source", "expected"), SHOULD_FAIL)
def test_checker_catches(name, source, expected):
    problems = layer_problems({**MODULES, name: source})
    assert any(a == name and expected in r for a, _, r in problems), problems


@pytest.mark.parametrize(("name", "source"), SHOULD_PASS)
def test_checker_passes(name, source):
    assert layer_problems({**MODULES, name: source}) == []


@pytest.mark.parametrize(
    "source",
    ["import sys\nsys.path.insert(0, 'x')\n", "import sys\nsys.path[:0] = ['x']\n",
     "from sys import path\nimport sys as s\nx = sys.path\n",
     "code = \"import sys; sys.path.insert(0, 'b'); import m\"\n"],
)  # fmt: skip
def test_sys_path_checker_catches(source):
    assert sys_path_problems(source, "x.py")


def test_sys_path_checker_passes_a_docstring():
    assert sys_path_problems('"""The checkout first on PYTHONPATH."""\nimport os\n', "x.py") == []
