#!/usr/bin/env bash
# onmt-reinforced driver: ./run.sh ACTION [ACTION ...]
# Variables (override from the environment):
#   data        folder with {train,valid,test}.{src,tgt}.txt      (default: data/cnndm)
#   root        folder for preprocessed data, models, predictions (default: runs/cnndm)
#   gpu         GPU id, -1 for CPU                               (default: -1)
#   cnndm_path  CNN/DM as published, read by `prepare`            (default: ../shared/data/cnndm)
#   gigaword_path  Gigaword as published, read by `prepare_gigaword` (default: ../shared/data/gigaword)
#   cnndm_small_data  CNN/DM {train,valid,test}.{src,tgt}.txt[.gz] for `cnndm_small` (default: $cnndm_path)
#   cnndm_small_jobs  one-thread processes side by side in `cnndm_small` (default: 2)
#   cnndm_small_workdir  `cnndm_small`'s data, checkpoints, predictions (default: runs/cnndm_small)
#   cnndm_small_results  where `cnndm_small`'s figures go (default: experiments/results/cnndm/, committed: the
#               views whose figures are there are not trained again); a fresh folder trains everything
#   train_config  YAML options for `train`                        (default: config/cnndm_reinforced.yaml)
#   rl_config   YAML options for `rl`                             (default: config/cnndm_rl.yaml)
#   rl_steps    steps of the mixed objective after the ML checkpoint (default: 20000)
#   model       checkpoint for `translate` (default: newest $root/models/rl_step_N.pt, else model_step_N.pt)
#   preprocess_config  YAML options for `preprocess`              (default: config/cnndm_preprocess.yaml)
#   beam_size / max_length / block_ngram_repeat  `translate` search (default: 5 / the checkpoint's own rules)
#   pred        predictions `translate` writes and `evaluate` scores (default: $root/pred.txt)
#   pred2       a second predictions file `evaluate` compares with $pred (paired bootstrap)
#   attn_plot   folder of `translate`'s attention plots (any path, spaces too)
#   translate_args  more translate.py options, word-split, e.g. "-replace_unk -n_best 2"; its -output X is
#               pred=X (the next `evaluate` scores X); an option run.sh sets from a variable is refused
#   TORCH_SPEC / TORCH_INDEX_URL  how `setup` installs PyTorch     (default: torch==2.13.0, CPU wheel)
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
data=${data:-$here/data/cnndm}
root=${root:-$here/runs/cnndm}
gpu=${gpu:--1}
cnndm_path=${cnndm_path:-$here/../shared/data/cnndm}
gigaword_path=${gigaword_path:-$here/../shared/data/gigaword}
cnndm_small_data=${cnndm_small_data:-$cnndm_path}
cnndm_small_jobs=${cnndm_small_jobs:-2}
cnndm_small_workdir=${cnndm_small_workdir:-$here/runs/cnndm_small}
cnndm_small_results=${cnndm_small_results:-$here/experiments/results/cnndm}
train_config=${train_config:-$here/config/cnndm_reinforced.yaml}
rl_config=${rl_config:-$here/config/cnndm_rl.yaml}
rl_steps=${rl_steps:-20000}
preprocess_config=${preprocess_config:-$here/config/cnndm_preprocess.yaml}
venv=${venv:-$here/.venv}
PY="$venv/bin/python"

usage() {
  cat <<USAGE
usage: ./run.sh ACTION [ACTION ...]
actions:
  setup       create .venv and install the project (idempotent)
  prepare     CNN/DM as published (\$cnndm_path: OpenNMT, See et al. .bin, Hugging Face export
              or seed layout) -> \$data/{train,valid,test}.{src,tgt}.txt
  prepare_gigaword  Gigaword (\$gigaword_path: Rush et al.'s release or seed layout) -> \$data
  preprocess  text in \$data -> vocabulary + shards in \$root/prep
  train       shards -> checkpoints in \$root/models   (options: \$train_config)
  rl          best (else newest) ML checkpoint -> mixed ML + self-critical RL, \$root/models/rl_step_N.pt
              (options: \$rl_config, \$rl_steps more steps)
  translate   latest checkpoint + \$data/test.src.txt -> \$root/pred.txt
  evaluate    \$root/pred.txt vs \$data/test.tgt.txt -> ROUGE
  demo        everything above on generated data, CPU, a few minutes
  cnndm_small CNN/DM at CPU scale (experiments/cnndm.py): lead-3, See et al.'s pointer-generator (+ coverage),
              the reinforced model, its ablations, the mixed objective against ML controls; resumable,
              tens of CPU-hours; says first what it trains, what it skips (figures committed) and how long
              (\$cnndm_small_data, \$cnndm_small_jobs, \$cnndm_small_workdir, \$cnndm_small_results)
  test        the test suite
  lint        ruff (lint, import order) and the import layering of onmt/ (tools/import_graph.py)
variables: data root gpu cnndm_path gigaword_path train_config rl_config rl_steps model preprocess_config
           cnndm_small_data cnndm_small_jobs cnndm_small_workdir cnndm_small_results beam_size max_length block_ngram_repeat pred pred2 attn_plot translate_args
           (see the top of run.sh)
USAGE
}

die() { echo "run.sh: $*" >&2; exit 1; }

# need_int NAME [MIN]: the variable NAME holds a whole number (>= MIN when given), else one line. Checked
# before any use: bash arithmetic on raw text runs the commands inside it (rl_steps='x[$(touch f)]').
need_int() {
  local v=${!1:-}
  [[ "$v" =~ ^-?[0-9]+$ ]] || die "$1='$v' is not a whole number"
  [ -z "${2:-}" ] || [ "$v" -ge "$2" ] || die "$1=$v: must be at least $2"
}

# A signal to run.sh (a scheduler's SIGTERM to its process, ^C) goes to the command running, which stops as
# it does on its own (its files whole, one line), then run.sh exits 143 / 130. Before, run.sh died alone and
# left the command running. The command runs in the background so that the trap runs at once; such a
# command ignores SIGINT (no job control), so it gets SIGTERM either way.
child=
py() {
  "$PY" "$@" &
  child=$!
  wait "$child"
  local rc=$?
  child=
  return "$rc"
}
stop() {  # stop STATUS
  trap - INT TERM
  if [ -n "$child" ]; then kill -TERM "$child"; wait "$child"; fi
  echo "run.sh: stopped by a signal" >&2
  exit "$1"
}
trap 'stop 130' INT
trap 'stop 143' TERM

setup() {
  local stamp="$venv/.onmt-installed" want
  # the project's requirements and the PyTorch asked for: a changed TORCH_SPEC / TORCH_INDEX_URL reinstalls
  want=$( { cat "$here/pyproject.toml"; echo "${TORCH_SPEC:-torch==2.13.0} ${TORCH_INDEX_URL:-}"; } | sha1sum | cut -d' ' -f1)
  if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] && "$PY" -c "import onmt, torch" 2>/dev/null; then
    return 0
  fi
  [ -x "$PY" ] || python3 -m venv "$venv" || die "setup: cannot create $venv"
  local idx=() torch_want torch_stamp="$venv/.onmt-torch"
  [ -n "${TORCH_INDEX_URL:-}" ] && idx=(--index-url "$TORCH_INDEX_URL")
  torch_want="${TORCH_SPEC:-torch==2.13.0} ${TORCH_INDEX_URL:-}"
  # another spec or index than the installed torch's (a CUDA wheel for the CPU one): reinstalled, not kept
  # because a torch of that version is already there
  if [ -f "$torch_stamp" ] && [ "$(cat "$torch_stamp")" != "$torch_want" ]; then
    echo "run.sh setup: PyTorch asked as '$torch_want' (was '$(cat "$torch_stamp")'): reinstalling it" >&2
    idx+=(--force-reinstall --no-deps)
  fi
  "$PY" -m pip install -q "${TORCH_SPEC:-torch==2.13.0}" "${idx[@]}" || die "setup: installing PyTorch failed"
  echo "$torch_want" > "$torch_stamp"
  "$PY" -m pip install -q -e "$here[test,bench,plot,tensorboard,parquet,server,release]" || die "setup: installing the project failed"
  rouge_perl
  echo "$want" > "$stamp"
}

# ROUGE-1.5.5 (onmt_evaluate -official) needs perl with XML::Parser: installed where root can apt-get,
# never fatal (without it the built-in scorer is used and the agreement tests skip).
rouge_perl() {
  perl -MXML::Parser -MDB_File -e 1 2>/dev/null && return 0
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    { DEBIAN_FRONTEND=noninteractive apt-get install -y -qq perl libxml-parser-perl \
      || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq perl libxml-parser-perl; }; } \
      >/dev/null 2>&1 || true
  fi
  perl -MXML::Parser -MDB_File -e 1 2>/dev/null \
    || echo "run.sh: note: no perl with XML::Parser here; onmt_evaluate -official needs it (Debian: libxml-parser-perl)" >&2
  return 0
}

prepare() {
  py "$here/tools/prepare_cnndm.py" -input "$cnndm_path" -output "$data" || die "prepare failed"
}

prepare_gigaword() {
  py "$here/tools/prepare_gigaword.py" -input "$gigaword_path" -output "$data" || die "prepare_gigaword failed"
}

need_data() {  # need_data ACTION FILE...: the first FILE that exists, else one line naming the fix
  local f
  for f in "${@:2}"; do [ -f "$f" ] && { printf '%s' "$f"; return 0; }; done
  die "$1: no $2 (data=$data): run ./run.sh prepare first, or set data to a folder of {train,valid,test}.{src,tgt}.txt"
}

preprocess() {
  local found; found=$(need_data preprocess "$data/train.src.txt") || exit 1
  mkdir -p "$root/prep"
  local valid=()
  [ -f "$data/valid.src.txt" ] && valid=(-valid_src "$data/valid.src.txt" -valid_tgt "$data/valid.tgt.txt")
  py "$here/preprocess.py" -config "$preprocess_config" -train_src "$data/train.src.txt" \
    -train_tgt "$data/train.tgt.txt" "${valid[@]}" -save_data "$root/prep/data" || die "preprocess failed"
}

train() {
  need_int gpu -1
  mkdir -p "$root/models"
  py "$here/train.py" -config "$train_config" -data "$root/prep/data" \
    -save_model "$root/models/model" -gpu "$gpu" || die "train failed"
}

latest_checkpoint() {  # latest_checkpoint PREFIX: the newest $root/models/PREFIX_step_N.pt (any path, spaces too)
  local f s best="" n=-1
  for f in "$root"/models/"$1"_step_*.pt; do
    [ -e "$f" ] || continue
    s=${f##*_step_}; s=${s%.pt}
    [[ "$s" =~ ^[0-9]+$ ]] || continue
    if [ "$s" -gt "$n" ]; then n=$s; best=$f; fi
  done
  printf '%s' "$best"
}

rl() {  # from the best ML checkpoint (the lowest validation perplexity), else the newest
  need_int rl_steps 1; need_int gpu -1
  local ckpt step; ckpt="$root/models/model_best.pt"
  [ -f "$ckpt" ] || ckpt=$(latest_checkpoint model)
  [ -n "$ckpt" ] || die "rl: no ML checkpoint in $root/models (run train first)"
  step=$("$PY" -c 'import sys; from onmt.utils.checkpoint import checkpoint_step as s; n = s(sys.argv[1])
sys.exit(1) if n is None else print(n)' "$ckpt" 2>/dev/null) && [[ "$step" =~ ^[0-9]+$ ]] \
    || die "rl: $ckpt is damaged or no checkpoint (its step cannot be read): remove it to start from the newest step checkpoint"
  py "$here/train.py" -config "$rl_config" -data "$root/prep/data" -train_from "$ckpt" \
    -save_model "$root/models/rl" -train_steps "$((step + rl_steps))" -gpu "$gpu" || die "rl failed"
}

# translate_options: $translate_args, word-split, into the array `more`; its -output (if any) becomes
# `pred`, so that the next `evaluate` scores the file translate wrote; an option run.sh sets from a
# variable is refused with the variable's name (translate.py would refuse it given twice).
translate_options() {
  local words=() w i=0 var
  read -r -a words <<< "${translate_args:-}"
  more=()
  while [ "$i" -lt "${#words[@]}" ]; do
    w=${words[$i]}
    case "$w" in
      -output|--output|-output=*|--output=*)
        local out=${w#*=}
        if [ "$out" = "$w" ]; then i=$((i + 1)); out=${words[$i]:-}; fi
        [ -n "$out" ] || die "translate_args: $w needs a file"
        [ -z "${pred:-}" ] || [ "$pred" = "$out" ] \
          || die "translate_args gives -output $out and pred=$pred: give the predictions' file once (pred=...)"
        pred=$out ;;
      -model|--model|-src|--src|-gpu|--gpu|-beam_size|--beam_size|-max_length|--max_length\
      |-block_ngram_repeat|--block_ngram_repeat|-attn_plot|--attn_plot|-model=*|--model=*|-src=*|--src=*\
      |-gpu=*|--gpu=*|-beam_size=*|--beam_size=*|-max_length=*|--max_length=*|-block_ngram_repeat=*\
      |--block_ngram_repeat=*|-attn_plot=*|--attn_plot=*)
        var=${w#-}; var=${var#-}; var=${var%%=*}
        [ "$var" = src ] && var=data
        die "translate_args gives $w, which run.sh sets itself: set the variable $var=... instead" ;;
      *) more+=("$w") ;;
    esac
    i=$((i + 1))
  done
}

translate() {
  need_int gpu -1
  local v; for v in beam_size max_length block_ngram_repeat; do [ -z "${!v:-}" ] || need_int "$v" 0; done
  local more=(); translate_options
  local ckpt=${model:-}
  [ -n "$ckpt" ] || ckpt=$(latest_checkpoint rl)
  [ -n "$ckpt" ] || ckpt=$(latest_checkpoint model)
  [ -n "$ckpt" ] || die "translate: no checkpoint in $root/models (run train first)"
  local src out=${pred:-$root/pred.txt} f
  src=$(need_data translate "$data/test.src.txt" "$data/valid.src.txt") || exit 1
  for f in "$data"/{train,valid,test}.{src,tgt}.txt; do   # the references too: evaluate would score them 100
    [ "$out" -ef "$f" ] && die "translate: pred=$out is $f, one of the data files: give pred another file"
  done
  echo "run.sh translate: $ckpt on $src -> $out" >&2
  py "$here/translate.py" -model "$ckpt" -src "$src" -output "$out" -gpu "$gpu" \
    -beam_size "${beam_size:-5}" ${block_ngram_repeat:+-block_ngram_repeat "$block_ngram_repeat"} \
    ${max_length:+-max_length "$max_length"} ${attn_plot:+-attn_plot "$attn_plot"} "${more[@]}" \
    || die "translate failed"
}

evaluate() {
  local ref="$data/test.tgt.txt" p; [ -f "$data/test.src.txt" ] || ref="$data/valid.tgt.txt"
  local found; found=$(need_data evaluate "$ref") || exit 1
  for p in "${pred:-$root/pred.txt}" ${pred2:+"$pred2"}; do
    [ "$p" -ef "$ref" ] && die "evaluate: the predictions $p are the references $ref: give pred another file"
  done
  echo "run.sh evaluate: scoring ${pred:-$root/pred.txt} against $ref" >&2
  local official=()
  "$PY" -c "import sys; from onmt.evaluation.official import available; sys.exit(not available())" 2>/dev/null \
    && official=(-official)
  local second=()
  [ -n "${pred2:-}" ] && second=(-pred "$pred2")
  py -m onmt.bin.evaluate -pred "${pred:-$root/pred.txt}" "${second[@]}" -ref "$ref" -json "$root/rouge.json" \
    "${official[@]}" || die "evaluate failed"
}

demo() {
  data="$here/runs/demo/data" root="$here/runs/demo"
  # runs/demo is the demo's own folder (its models and plots are removed below): its data, toy.json or not
  # (made before make_toy_data.py marked its corpora), is replaced
  py "$here/tools/make_toy_data.py" -task summ -dir "$data" -seed 1 -overwrite || die "demo: data generation failed"
  rm -rf "$root/models" "$root/plots"
  preprocess_config="$here/config/demo_preprocess.yaml" preprocess
  train_config="$here/config/demo_train.yaml" train
  local ml="$root/models/model_best.pt"; [ -f "$ml" ] || ml=$(latest_checkpoint model)   # what rl starts from
  rl_config="$here/config/demo_rl.yaml" rl_steps=150 rl
  model="$ml" pred="$root/pred_ml.txt" beam_size=5 max_length=30 translate
  attn_plot="$root/plots" translate_args="-attn_plot_n 5" beam_size=5 max_length=30 translate
  pred2="$root/pred_ml.txt" evaluate
  "$PY" - "$root/rouge.json" "$ml" "$(latest_checkpoint rl)" "$root" <<'SUMMARY' || die "demo: summary failed"
import json, sys
scores, ml, rl, root = json.load(open(sys.argv[1])), sys.argv[2], sys.argv[3], sys.argv[4]
row = lambda s: " ".join(f"{s[m]['f']:6.2f}" for m in ("rouge1", "rouge2", "rougeL"))
print(f"\ndemo: ROUGE F1 on the test set     R-1    R-2    R-L")
print(f"  ML      ({ml.rsplit('/', 1)[-1]:>19}) {row(scores['pred2'])}")
print(f"  ML + RL ({rl.rsplit('/', 1)[-1]:>19}) {row(scores)}")
print(f"predictions: {root}/pred_ml.txt (ML), {root}/pred.txt (ML + RL); attention plots: {root}/plots/")
SUMMARY
}

cnndm_small() {
  need_int cnndm_small_jobs 1
  # through py: a signal to run.sh reaches the scheduler, which stops every job it started (experiments/common.py)
  OMP_NUM_THREADS=1 py "$here/experiments/cnndm.py" -data "$cnndm_small_data" -jobs "$cnndm_small_jobs" \
    -workdir "$cnndm_small_workdir" -results "$cnndm_small_results" \
    || die "cnndm_small failed (run it again: it goes on where it stopped)"
}

lint() {
  # ruff (pyproject.toml [tool.ruff]: pyflakes, pycodestyle, import order, 120 columns), then the import layering
  cd "$here" && "$venv/bin/ruff" check . || die "ruff found problems (fix with: $venv/bin/ruff check --fix .)"
  "$venv/bin/ruff" check --select C901 onmt || die "a function of onmt/ above McCabe 15 (pyproject.toml): split it"
  "$PY" tools/import_graph.py -check >/dev/null || die "onmt/ folders import each other: python tools/import_graph.py"
  echo "lint: ruff clean, no function of onmt/ above McCabe 15, no import cycles between onmt/ folders"
}

run_tests() {
  # shellcheck disable=SC2086
  cd "$here" && "$PY" -m pytest -q ${pytest_args:-} || die "tests failed"
}

[ $# -gt 0 ] || { usage; exit 2; }
for action in "$@"; do
  case "$action" in
    setup) setup ;;
    prepare|prepare_gigaword|preprocess|train|rl|translate|evaluate) setup; "$action" ;;
    demo) setup; demo ;;
    cnndm_small) setup; cnndm_small ;;
    test) setup; run_tests ;;
    lint) setup; lint ;;
    -h|--help|help) usage ;;
    *) usage >&2; die "unknown action '$action'" ;;
  esac
done
