#!/usr/bin/env bash
# The GPU suite as one call of the device tool, on the lent GPU machine (no network; its python3 holds PyTorch):
#   here:   bash bench/gpu_prepare.sh                  (once: wheels and data into .gpu, ignored by git)
#   device: run(command="bash bench/gpu_device.sh", carry=[".gpu"], timeout_s=600)
# Installs the carried wheels under /tmp (this project's missing requirements on its PYTHONPATH, upstream
# OpenNMT-py apart, on its own), runs bench/gpu_suite.sh with the upstream comparison on the carried data
# within SUITE_BUDGET (default 520 s, so that the call ends inside the tool's 600 s), and leaves in $OUT
# (runs/gpu_device where $OUT is unset): table.md (the suite's table, with the machine's GPU and torch
# above it) and logs.tar.gz (every piece's log, no checkpoints). Exit status: the suite's.
set -uo pipefail
cd "$(dirname "$0")/.."
DIR=${GPU_DIR:-.gpu}
DEST=${OUT:-runs/gpu_device}
PY=${PYTHON:-python3}
WORK=${GPU_WORK:-/tmp/gpu_suite}
if [ ! -d "$DIR/whl/ours" ] || [ ! -d "$DIR/whl/upstream" ] || [ ! -d "$DIR/data" ]; then
  echo "gpu_device: $DIR holds no wheels or data: run bash bench/gpu_prepare.sh first, and carry $DIR" >&2
  exit 2
fi
SITE=/tmp/gpu_site
USITE=/tmp/gpu_upstream_site
for pair in "$SITE:$DIR/whl/ours" "$USITE:$DIR/whl/upstream"; do
  "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "${pair%%:*}" \
    "${pair#*:}"/*.whl || { echo "gpu_device: installing ${pair#*:} failed" >&2; exit 1; }
done
mkdir -p "$DEST" "$WORK"
# the repository on the path too: the image has this project uninstalled (tools/*.py import onmt)
export PYTHON=$PY PYTHONPATH=$SITE:$PWD${PYTHONPATH:+:$PYTHONPATH}
export SUITE_UPSTREAM_PYTHON=$PY SUITE_UPSTREAM_PYTHONPATH=$USITE:$SITE SUITE_COMPARE_DATA=$DIR/data
export SUITE_BUDGET=${SUITE_BUDGET:-520}
bash bench/gpu_suite.sh "$WORK" > "$WORK/suite.log" 2>&1; rc=$?   # its table is printed below
{
  echo "GPU suite, $(date -u '+%Y-%m-%d %H:%M UTC'), commit $(git rev-parse --short HEAD 2>/dev/null || echo '?')"
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>/dev/null | sed 's/^/GPU: /'
  "$PY" -c "import torch; print('torch', torch.__version__, 'CUDA', torch.version.cuda)" 2>/dev/null
  echo
  cat "$WORK/table.md" 2>/dev/null || echo "(no table: the suite stopped early, exit $rc)"
  [ $rc = 0 ] || { echo; echo "suite exit $rc; its last lines:"; tail -5 "$WORK/suite.log"; }
} > "$DEST/table.md"
tar czf "$DEST/logs.tar.gz" -C "$WORK" --exclude='*.pt' --exclude=data --exclude=prep --exclude='*/data' \
  --exclude='*/ours/data*' --exclude='*/upstream/data*' . 2>/dev/null
cat "$DEST/table.md"
exit $rc
