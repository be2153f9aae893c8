#!/usr/bin/env bash
# Every check that needs a real NVIDIA GPU, in one go (for a short, lent GPU machine):
#   1. the GPU tests on the hardware (kernels and cuda executor; `gpu`-marked tests included),
#   2. benchmarks/gpu_streams.py (1, 2, 4 streams; its table, JSON and timelines),
#   3. the CLI on the GPU: `run --device gpu` and `demo` (which adds the GPU comparison),
#   4. explain() on a one-stream GPU trace.
# Results go to $OUT (default ./gpu-check): text logs, plus files.tgz with the PNGs and JSON.
#     bash benchmarks/gpu_check.sh            # ~5 minutes; each step has its own time limit
set -u
OUT=${OUT:-gpu-check}
mkdir -p "$OUT/files"
export PYTHONUNBUFFERED=1 NUMBA_CUDA_LOW_OCCUPANCY_WARNINGS=0 PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
PY=${PYTHON:-python3}
step() { echo "== $1 ($(date +%T))"; }

step environment
{
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv
    $PY -c "import sys, numpy, numba; print(sys.version.split()[0], 'numpy', numpy.__version__, 'numba', numba.__version__)"
    $PY -m pip show numba-cuda 2>/dev/null | head -2
    nproc
} 2>&1 | tee "$OUT/env.txt"

step "GPU tests on the hardware"
timeout 240 $PY -m pytest -q -p no:cacheprovider tests/test_gpu.py tests/test_gpu_kernels.py \
    >"$OUT/pytest.txt" 2>&1
echo "pytest exit $?"; tail -n 25 "$OUT/pytest.txt"

step "benchmarks/gpu_streams.py"
timeout 260 $PY benchmarks/gpu_streams.py --budget 200 \
    --sizes narrow 32x2048x2048x32 small medium large \
    --json "$OUT/files/gpu_streams.json" --timelines "$OUT/files" 2>&1 | tee "$OUT/bench.txt"

step "CLI on the GPU"
timeout 60 $PY -m parallelgraph run --device gpu --streams 2 --stream-policy branches \
    --size narrow --repeats 5 2>&1 | tail -n 15
timeout 150 $PY -m parallelgraph demo --out "$OUT/files/demo" --repeats 7 >"$OUT/demo.txt" 2>&1
echo "demo exit $?"; tail -n 12 "$OUT/demo.txt"

step "explain() on one stream"
timeout 60 $PY - <<'EOF' 2>&1 | tee "$OUT/explain.txt"
import parallelgraph as pg
from parallelgraph.presets import two_networks

preset = two_networks("narrow", device_name="gpu:0")
with pg.Session(preset.graph, pg.Config(streams=1)) as sess:
    for _ in range(3):
        sess.run(preset.fetch)
    _, trace = sess.run(preset.fetch, trace=True)
print(trace.explain())
EOF

tar czf "$OUT/files.tgz" -C "$OUT" files && rm -rf "$OUT/files"
step done
