#!/usr/bin/env bash
# Everything to check on one GPU, in at most 10 minutes, ending in one table:
#   bash bench/gpu_suite.sh [WORKDIR]          (default WORKDIR: runs/gpu_suite)
# The pieces run most important first, so that a GPU lent for a few minutes yields those rows (the first lines
# printed list the order and each piece's limit; each row gives the seconds its piece took):
#  1. the test suite's CUDA tests (pytest -k "cuda or gpu");
#  2. -amp parity of the reinforced model: bf16 and fp16 training for 300 steps on toy data (tools/make_toy_data.py
#     -task copy), validating every 100 steps, beside a float32 run of the same seed: loss parity PASS / FAIL,
#     the -amp run's first validation perplexity (step 100) within 2 % of the float32 run's, the last ones shown
#     (bench/suite_parity.py says why not the last);
#  3. the reinforced model's ML step at the paper's sizes (bench/reinforced_step_bench.py, batch 32, 400 / 100
#     tokens, V 150k / 50k, against the per-step generator and train.py -compile's step, its compilation apart);
#  4. beam translation of the toy test set with the reinforced model at each precision this GPU runs (fp32, bf16,
#     fp16; onmt/hardware.py refuses int8 on CUDA), sentences/s and ROUGE against fp32 (bench/precision_quality.py);
#  5. -amp parity of the other families (rnn, copy), as 2.;
#  6. See et al.'s step (bench/train_bench.py, batch 16, 400 / 100, V 50k) and the mixed-objective step against
#     the ML step (bench/mixed_step_bench.py, rollouts of 100 tokens);
#  7. beam translation with See et al.'s (copy) model at each precision, as 4.;
#  8. a 1-GPU torchrun of the reinforced model (100 steps);
#  9. ours against upstream OpenNMT-py 3.5.1 (bench/compare_upstream.py -device, 100 steps, 200 sentences at
#     each precision) where SUITE_UPSTREAM_PYTHON names a python that runs upstream.
# On the lent GPU machine run it through bench/gpu_device.sh (which installs the wheels bench/gpu_prepare.sh
# fetched here and sets the SUITE_ variables).
# Each piece runs under `timeout` within what is left of SUITE_BUDGET seconds (default 570 on CUDA): a piece
# cut off is a TIMED OUT row, a piece with no time left a skipped one, so the suite ends within the budget.
# With no CUDA device it stops at once with one line saying so (exit status 2). Run on an H200 on 2026-11-28
# (docs/GPU.md: its table and what it found); SUITE_DEVICE=cpu runs each piece on the CPU (GPU=-1, small
# benchmark sizes) except the CUDA tests, the fp16 rows and torchrun.
set -uo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-.venv/bin/python}
WORK=${1:-runs/gpu_suite}
DEVICE=${SUITE_DEVICE:-cuda}
STEPS=${SUITE_STEPS:-300}
T0=$(date +%s)
if [ "$DEVICE" = cuda ]; then
  if ! "$PY" -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)" 2>/dev/null; then
    echo "gpu_suite: no CUDA device (torch.cuda.is_available() is False): run it on a machine with a GPU" >&2
    exit 2
  fi
  GPU=0; AMPS="fp32 bf16 fp16"; PRECISIONS="fp32,bf16,fp16"; BUDGET=${SUITE_BUDGET:-570}; SCALE=1
  # the papers' sizes (the benchmarks' defaults); 100 s (with -compile's 73 s compilation), 13 s, 11 s on an H200
  RL_STEP=(-steps 5 -variants optimized hoisted compiled); SEE_STEP=(-steps 10); MIXED_STEP=(-steps 3)
else
  GPU=-1; AMPS="fp32 bf16"; PRECISIONS=""; BUDGET=${SUITE_BUDGET:-3000}; SCALE=5   # the CPU: 5x each limit
  RL_STEP=(-batch_size 8 -src_len 100 -tgt_len 25 -src_vocab 20000 -tgt_vocab 10000 -steps 2 -variants optimized hoisted compiled)
  SEE_STEP=(-batch_size 8 -src_len 100 -tgt_len 25 -tgt_vocab 10000 -steps 2)
  MIXED_STEP=(-batch_size 8 -src_len 100 -tgt_len 25 -src_vocab 20000 -tgt_vocab 10000 -steps 2)
fi
mkdir -p "$WORK"
TABLE="$WORK/table.md"
echo "| check | result |" > "$TABLE"; echo "| --- | --- |" >> "$TABLE"
row() { echo "| $1 | $2 |" >> "$TABLE"; }
PIECE_START=$T0
{
  echo "gpu_suite: device $DEVICE, budget $BUDGET s; in this order (limit in s, each cut to what is left):"
  [ "$DEVICE" = cuda ] && echo "  1. CUDA tests (120)"
  echo "  2. reinforced -amp parity: $(echo $AMPS | wc -w) trainings of $STEPS steps ($(( 60 * SCALE )) each)"
  echo "  3. reinforced ML step benchmark ($(( 180 * SCALE )))"
  echo "  4. reinforced beam translation at each precision ($(( 90 * SCALE )))"
  echo "  5. rnn and copy -amp parity ($(( 60 * SCALE )) each training)"
  echo "  6. See et al. step ($(( 90 * SCALE ))), mixed step / ML step ($(( 120 * SCALE ))) benchmarks"
  echo "  7. See et al. beam translation at each precision ($(( 90 * SCALE )))"
  [ "$DEVICE" = cuda ] && echo "  8. torchrun, 1 GPU (90)"
  echo "  9. upstream comparison (150 x SCALE; where SUITE_UPSTREAM_PYTHON is set)"
}

# piece LIMIT LOG CMD...: CMD with stdout and stderr to LOG, cut off after LIMIT (x SCALE) seconds or what is
# left of the budget, whichever comes first. Status: CMD's, 124 when cut off, 125 when skipped (under 10 s left).
piece() {
  local limit=$(( $1 * SCALE )) log=$2; shift 2
  local left=$(( BUDGET - ($(date +%s) - T0) ))
  (( left < limit )) && limit=$left
  PIECE_START=$(date +%s)
  if (( limit < 10 )); then echo "skipped: the suite's budget of $BUDGET s is spent" > "$log"; return 125; fi
  timeout "$limit" "$@" > "$log" 2>&1
}
took() { echo "$(( $(date +%s) - PIECE_START )) s"; }   # the seconds the last piece took
# outcome STATUS LOG: the table's words for a piece that ended with STATUS
outcome() {
  case $1 in
    0) echo "passed" ;;
    124) echo "TIMED OUT (see $2)" ;;
    125) echo "skipped (suite budget spent)" ;;
    *) echo "FAILED, exit $1 (see $2)" ;;
  esac
}

if [ "$DEVICE" = cuda ]; then
  piece 120 "$WORK/pytest.log" "$PY" -m pytest -q -p no:cacheprovider -k "cuda or gpu" tests; rc=$?
  row "CUDA tests" "$(outcome $rc "$WORK/pytest.log"): $(tail -1 "$WORK/pytest.log"), $(took)"
fi

"$PY" tools/make_toy_data.py -task copy -dir "$WORK/data" -seed 1 -train_size 3000 -valid_size 200 -test_size 200 -overwrite >/dev/null
"$PY" preprocess.py -train_src "$WORK/data/train.src.txt" -train_tgt "$WORK/data/train.tgt.txt" \
  -valid_src "$WORK/data/valid.src.txt" -valid_tgt "$WORK/data/valid.tgt.txt" -save_data "$WORK/prep/data" \
  -share_vocab -dynamic_dict -overwrite > "$WORK/preprocess.log" 2>&1 || { echo "gpu_suite: preprocess failed (see $WORK/preprocess.log)" >&2; exit 1; }

declare -A FAMILY=([rnn]="-brnn -global_attention general" [copy]="-brnn -copy_attn -coverage_attn -global_attention mlp" [reinforced]="-reinforced")
amp_parity() {  # amp_parity FAMILY: its fp32 and -amp trainings, a row each, then its loss-parity rows
  local fam=$1 amp extra log rc ppl
  for amp in $AMPS; do
    extra=""; [ "$amp" != fp32 ] && extra="-amp -amp_dtype $amp"
    log="$WORK/train_${fam}_${amp}.log"
    rm -f "$WORK/${fam}_${amp}"_step_*.pt "$WORK/${fam}_${amp}_best.pt" "$log"
    # shellcheck disable=SC2086
    piece 60 "$WORK/train_${fam}_${amp}.out" "$PY" train.py -data "$WORK/prep/data" -save_model "$WORK/${fam}_${amp}" \
      ${FAMILY[$fam]} $extra -gpu $GPU -rnn_size 128 -word_vec_size 64 -batch_size 32 -train_steps "$STEPS" \
      -valid_steps 100 -save_checkpoint_steps "$STEPS" -report_every 100 -seed 1 -log_file "$log"; rc=$?
    ppl=$(grep -o "Validation perplexity: [0-9.e+-]*" "$log" 2>/dev/null | tail -1 | awk '{print $3}')
    row "train $fam $amp ($STEPS steps)" "$(outcome $rc "$WORK/train_${fam}_${amp}.out"), val ppl ${ppl:--}, $(took)"
  done
  # shellcheck disable=SC2086
  "$PY" -m bench.suite_parity -work "$WORK" -families "$fam" -amps $AMPS >> "$TABLE"
}

found_row() {  # found_row LABEL LOG STATUS FOUND: FOUND, after the outcome where the piece did not pass
  if [ "$3" = 0 ]; then row "$1" "$4"; else row "$1" "$(outcome "$3" "$2")${4:+; $4}"; fi
}
bench_row() {  # bench_row LABEL LOG PATTERN STATUS: the benchmark's lines matching PATTERN, joined by "; "
  found_row "$1" "$2" "$4" "$(grep -E "$3" "$2" 2>/dev/null | sed 's/  */ /g' | paste -sd ';' | sed 's/;/; /g'); $(took)"
}
# beam translation at each precision (translate FAMILY): the reinforced model's decoding and See et al.'s (copy,
# mlp attention, a beam keeping each source once), from the fp32 training runs above
prec_args=(); [ -n "$PRECISIONS" ] && prec_args=(-precisions "$PRECISIONS")
translate() {
  local fam=$1 rc CKPT="$WORK/${1}_fp32_step_${STEPS}.pt"
  [ -f "$CKPT" ] || { row "translate ($fam) at each precision" "not run: no fp32 checkpoint $CKPT"; return; }
  piece 90 "$WORK/precision_${fam}.log" "$PY" -m bench.precision_quality -model "$CKPT" -src "$WORK/data/test.src.txt" \
    -tgt "$WORK/data/test.tgt.txt" -n 200 -device "$DEVICE" "${prec_args[@]}"; rc=$?
  if [ $rc = 0 ]; then
    grep "^| [a-z]" "$WORK/precision_${fam}.log" | grep -v "^| precision" | while read -r line; do
      row "translate ($fam) $(echo "$line" | cut -d'|' -f2)" "$(echo "$line" | cut -d'|' -f3-8 | tr '|' ';')"; done
    row "translate ($fam), all precisions" "$(took)"
  else row "translate ($fam) at each precision" "$(outcome $rc "$WORK/precision_${fam}.log"), $(took)"; fi
}

amp_parity reinforced
piece 180 "$WORK/bench_reinforced_step.log" "$PY" -m bench.reinforced_step_bench -device "$DEVICE" "${RL_STEP[@]}"; rc=$?
bench_row "reinforced ML step (bench/reinforced_step_bench.py ${RL_STEP[*]})" "$WORK/bench_reinforced_step.log" \
  "^optimized|^speed-up|matmul peak|^compiled: first" $rc
translate reinforced
amp_parity rnn
amp_parity copy
piece 90 "$WORK/bench_see_step.log" "$PY" -m bench.train_bench -device "$DEVICE" "${SEE_STEP[@]}"; rc=$?
bench_row "See et al. step (bench/train_bench.py ${SEE_STEP[*]})" "$WORK/bench_see_step.log" "^train:|utilization|peak" $rc
piece 120 "$WORK/bench_mixed_step.log" "$PY" -m bench.mixed_step_bench -device "$DEVICE" "${MIXED_STEP[@]}"; rc=$?
bench_row "mixed step / ML step (bench/mixed_step_bench.py ${MIXED_STEP[*]})" "$WORK/bench_mixed_step.log" \
  "^ML |^mixed" $rc

translate copy

if [ "$DEVICE" = cuda ]; then
  rm -f "$WORK"/torchrun_step_*.pt "$WORK/torchrun_best.pt"
  piece 90 "$WORK/torchrun.log" "$PY" -m torch.distributed.run --standalone --nproc_per_node 1 train.py \
    -data "$WORK/prep/data" -save_model "$WORK/torchrun" -reinforced -gpu 0 -train_steps 100 -valid_steps 100 \
    -save_checkpoint_steps 100 -rnn_size 128 -word_vec_size 64 -batch_size 32; rc=$?
  row "torchrun 1 GPU" "$(outcome $rc "$WORK/torchrun.log"), $(took)"
fi
# 9. the upstream comparison (bench/compare_upstream.py) on this device, where upstream can be run: SUITE_UPSTREAM_PYTHON
#    (with SUITE_UPSTREAM_PYTHONPATH; bench/gpu_device.sh sets both) on SUITE_COMPARE_DATA
if [ -n "${SUITE_UPSTREAM_PYTHON:-}" ]; then
  piece 150 "$WORK/compare_upstream.log" "$PY" bench/compare_upstream.py -device "$DEVICE" \
    -upstream_python "$SUITE_UPSTREAM_PYTHON" -upstream_pythonpath "${SUITE_UPSTREAM_PYTHONPATH:-}" \
    -data "${SUITE_COMPARE_DATA:-../shared/data/gigaword}" -workdir "$WORK/compare_upstream" \
    -steps "${SUITE_COMPARE_STEPS:-100}" -translate_n 200 -rounds 1 -bootstrap 100; rc=$?
  # its table's speed rows, "| figure | ours | upstream | ratio |", as "figure: ours A, upstream B, ratio"
  found=$(grep -E "^\| (training target tokens/s|translation sentences/s at)" "$WORK/compare_upstream.log" |
    awk -F'|' '{for (i = 2; i <= 5; i++) gsub(/^ +| +$/, "", $i); print $2 ": ours " $3 ", upstream " $4 ", " $5}' |
    paste -sd '\t' | sed 's/\t/; /g')
  found_row "upstream comparison (bench/compare_upstream.py -steps ${SUITE_COMPARE_STEPS:-100}, 200 sentences)" \
    "$WORK/compare_upstream.log" $rc "${found:+$found; }$(took)"
else
  row "upstream comparison" "not run: SUITE_UPSTREAM_PYTHON unset (bench/gpu_device.sh sets it)"
fi
row "suite" "$(( $(date +%s) - T0 )) s of the budget's $BUDGET s"
echo; cat "$TABLE"
