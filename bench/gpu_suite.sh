#!/usr/bin/env bash
# Everything to check on one GPU, in about 10 minutes, ending in one table:
#   bash bench/gpu_suite.sh [WORKDIR]          (default WORKDIR: runs/gpu_suite)
# 1. the test suite's CUDA tests (pytest -k "cuda or gpu");
# 2. -amp bf16 and fp16 training of each family (rnn, copy, reinforced) for 300 steps on toy data
#    (tools/make_toy_data.py -task copy), validation perplexity against the float32 run's;
# 3. beam translation of the toy test set at each precision this GPU runs (fp32, bf16, fp16;
#    onmt/hardware.py refuses int8 on CUDA), sentences/s and ROUGE against fp32 (bench/precision_quality.py);
# 4. a 1-GPU torchrun of the reinforced model (100 steps).
# With no CUDA device it stops at once with one line saying so (exit status 2). NOT YET RUN ON A GPU:
# no GPU was available when it was written; each piece runs on the CPU with GPU=-1 (SUITE_DEVICE=cpu)
# except the CUDA tests and the fp16 rows.
set -uo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-.venv/bin/python}
WORK=${1:-runs/gpu_suite}
DEVICE=${SUITE_DEVICE:-cuda}
STEPS=${SUITE_STEPS:-300}
if [ "$DEVICE" = cuda ]; then
  if ! "$PY" -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)" 2>/dev/null; then
    echo "gpu_suite: no CUDA device (torch.cuda.is_available() is False): run it on a machine with a GPU" >&2
    exit 2
  fi
  GPU=0; AMPS="fp32 bf16 fp16"; PRECISIONS="fp32,bf16,fp16"
else
  GPU=-1; AMPS="fp32 bf16"; PRECISIONS=""
fi
mkdir -p "$WORK"
TABLE="$WORK/table.md"
echo "| check | result |" > "$TABLE"; echo "| --- | --- |" >> "$TABLE"
row() { echo "| $1 | $2 |" >> "$TABLE"; }

if [ "$DEVICE" = cuda ]; then
  if "$PY" -m pytest -q -p no:cacheprovider -k "cuda or gpu" tests > "$WORK/pytest.log" 2>&1; then
    row "CUDA tests" "passed: $(tail -1 "$WORK/pytest.log")"; else row "CUDA tests" "FAILED: $(tail -1 "$WORK/pytest.log")"; fi
fi

"$PY" tools/make_toy_data.py -task copy -dir "$WORK/data" -seed 1 -train_size 3000 -valid_size 200 -test_size 200 >/dev/null
"$PY" preprocess.py -train_src "$WORK/data/train.src.txt" -train_tgt "$WORK/data/train.tgt.txt" \
  -valid_src "$WORK/data/valid.src.txt" -valid_tgt "$WORK/data/valid.tgt.txt" -save_data "$WORK/prep/data" \
  -share_vocab -dynamic_dict -overwrite > "$WORK/preprocess.log" 2>&1 || { echo "gpu_suite: preprocess failed (see $WORK/preprocess.log)" >&2; exit 1; }

declare -A FAMILY=([rnn]="-brnn -global_attention general" [copy]="-brnn -copy_attn -coverage_attn -global_attention mlp" [reinforced]="-reinforced")
for fam in rnn copy reinforced; do
  for amp in $AMPS; do
    extra=""; [ "$amp" != fp32 ] && extra="-amp -amp_dtype $amp"
    log="$WORK/train_${fam}_${amp}.log"
    rm -f "$WORK/${fam}_${amp}"_step_*.pt "$WORK/${fam}_${amp}_best.pt"
    start=$(date +%s)
    # shellcheck disable=SC2086
    "$PY" train.py -data "$WORK/prep/data" -save_model "$WORK/${fam}_${amp}" ${FAMILY[$fam]} $extra -gpu $GPU \
      -rnn_size 128 -word_vec_size 64 -batch_size 32 -train_steps "$STEPS" -valid_steps "$STEPS" \
      -save_checkpoint_steps "$STEPS" -report_every 100 -seed 1 -log_file "$log" > /dev/null 2>&1
    ppl=$(grep -o "Validation perplexity: [0-9.e+-]*" "$log" | tail -1 | awk '{print $3}')
    row "train $fam $amp ($STEPS steps)" "val ppl ${ppl:-FAILED}, $(( $(date +%s) - start )) s"
  done
done

CKPT="$WORK/reinforced_fp32_step_${STEPS}.pt"
if [ -f "$CKPT" ]; then
  prec_args=(); [ -n "$PRECISIONS" ] && prec_args=(-precisions "$PRECISIONS")
  "$PY" -m bench.precision_quality -model "$CKPT" -src "$WORK/data/test.src.txt" -tgt "$WORK/data/test.tgt.txt" \
    -n 200 -device "$DEVICE" "${prec_args[@]}" > "$WORK/precision.log" 2>&1 \
    && grep "^| [a-z]" "$WORK/precision.log" | grep -v "^| precision" | while read -r line; do row "translate (reinforced) $(echo "$line" | cut -d'|' -f2)" "$(echo "$line" | cut -d'|' -f3-8 | tr '|' ';')"; done \
    || row "translate at each precision" "FAILED (see $WORK/precision.log)"
fi

if [ "$DEVICE" = cuda ]; then
  if "$PY" -m torch.distributed.run --standalone --nproc_per_node 1 train.py -data "$WORK/prep/data" \
      -save_model "$WORK/torchrun" -reinforced -gpu 0 -train_steps 100 -valid_steps 100 -save_checkpoint_steps 100 \
      -rnn_size 128 -word_vec_size 64 -batch_size 32 > "$WORK/torchrun.log" 2>&1; then
    row "torchrun 1 GPU" "passed"; else row "torchrun 1 GPU" "FAILED (see $WORK/torchrun.log)"; fi
fi
echo; cat "$TABLE"
