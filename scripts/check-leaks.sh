#!/usr/bin/env bash
# Nothing the test suite starts may outlive it. `check-leaks.sh start FILE`
# records what exists before the tests (a machine may carry leftovers of
# earlier, killed runs); `check-leaks.sh check FILE` then fails on anything
# new: containers or images carrying nextstate's owner label, bwrap, Xvfb or
# Chromium processes, the project's temporary directories, bwrap sandboxes'
# disk mounts.
set -u
mode=${1:-check}
base=${2:-.leaks-baseline}

snapshot() {
  if command -v docker >/dev/null 2>&1 && timeout 10 docker info >/dev/null 2>&1; then
    docker ps -aq --no-trunc --filter label=nextstate.owner | sed 's/^/container /'
    docker images -q --no-trunc --filter label=nextstate.owner | sed 's/^/image /'
  fi
  # Process names as the kernel keeps them (15 characters at most).
  for p in bwrap Xvfb chromium chromium-headle xterm xedit; do
    pgrep -x "$p" 2>/dev/null | sed "s/^/process $p /"
  done
  tmp=${TMPDIR:-/tmp}
  find "$tmp" -maxdepth 1 -name 'nextstate-*' ! -name nextstate-bwrap 2>/dev/null | sed 's/^/dir /'
  find "$tmp/nextstate-bwrap" -mindepth 1 -maxdepth 1 2>/dev/null | sed 's/^/dir /'
  # bwrap sandboxes' disks (a tmpfs each, wherever their state directory is).
  awk '$3 == "tmpfs" && $2 ~ /_bw[0-9a-z]+\/disk$/ {print "mount " $2}' /proc/mounts 2>/dev/null
}

case "$mode" in
start)
  snapshot | sort >"$base"
  n=$(wc -l <"$base")
  [ "$n" -gt 0 ] && echo "leaks: $n leftovers of earlier runs are not counted (see $base)"
  exit 0
  ;;
check)
  [ -f "$base" ] || : >"$base"
  new=$(snapshot | sort | comm -13 "$base" -)
  if [ -n "$new" ]; then
    echo "leak: left behind by the tests:" >&2
    echo "$new" >&2
    exit 1
  fi
  echo "no leaks: no new labelled containers or images, bwrap/Xvfb/Chromium processes or temporary directories"
  ;;
*)
  echo "usage: $0 start|check [FILE]" >&2
  exit 2
  ;;
esac
