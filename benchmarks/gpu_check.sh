#!/usr/bin/env bash
# One-GPU check of llm_runs (< 8 minutes on one modern GPU): the gpu-marked tests, a short
# bf16 training run with its log validated, and the benchmark on the GPU.
#   bash benchmarks/gpu_check.sh            # writes gpu_check_out/ (or $OUT)
# Without .venv (a lent GPU machine with its own torch, transformers and peft), the checkout is
# put on PYTHONPATH and python3 is used: last run that way on an H200 in 170 s (2026-12-04).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -z "${PY:-}" ] && [ ! -x .venv/bin/python ]; then
  PY=python3
  export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
fi
PY=${PY:-.venv/bin/python}
OUT=${OUT:-gpu_check_out}
PRESET=${PRESET:-small}
mkdir -p "$OUT"
t0=$(date +%s)
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader || true
$PY - <<'PY'
import torch
assert torch.cuda.is_available(), "no CUDA device visible to torch"
print("torch", torch.__version__, "cuda", torch.version.cuda, torch.cuda.get_device_name(0))
PY

echo "== gpu tests"
timeout 180 $PY -m pytest -q -m gpu tests/llm_runs

echo "== train (pretrain $PRESET base, then C1 joint RL on math, bf16 autocast)"
timeout 300 $PY -m llm_runs train --device cuda --preset "$PRESET" --task math --motif C1 \
  --steps 300 --eval-every 25 --batch 64 --base-cache "$OUT/cache" --out "$OUT/c1" \
  --no-progress
$PY - "$OUT/c1" <<'PY'
import sys
from llm_runs.runlog import read_run
log = read_run(sys.argv[1])
e2e = log.e2e_rows
print(f"log ok: {len(log.rows)} rows; e2e accuracy {e2e[0]['accuracy']:.3f} -> "
      f"{e2e[-1]['accuracy']:.3f}")
PY

echo "== benchmark"
timeout 150 $PY benchmarks/bench_llm.py --device cuda --preset "$PRESET" --batch 128 \
  | tee "$OUT/bench.txt"
echo "gpu_check done in $(( $(date +%s) - t0 )) s"
