#!/usr/bin/env bash
# Run after the test suite: fails if anything the project starts was left
# behind — containers or snapshot images carrying nextstate's owner label,
# bwrap or Xvfb/Chromium processes, the bwrap backend's state directories.
set -u
fail=0
if command -v docker >/dev/null 2>&1 && timeout 10 docker info >/dev/null 2>&1; then
  c=$(docker ps -aq --filter label=nextstate.owner | wc -l)
  if [ "$c" -gt 0 ]; then
    echo "leak: $c containers with a nextstate.owner label:" >&2
    docker ps -a --filter label=nextstate.owner --format '{{.ID}} {{.Image}} {{.Labels}}' >&2
    fail=1
  fi
  i=$(docker images -q --filter label=nextstate.owner | wc -l)
  if [ "$i" -gt 0 ]; then
    echo "leak: $i images with a nextstate.owner label (snapshots)" >&2
    fail=1
  fi
fi
for p in bwrap Xvfb chromium chromium-headless-shell; do
  n=$(pgrep -xc "$p" 2>/dev/null || true)
  if [ -n "$n" ] && [ "$n" -gt 0 ]; then
    echo "leak: $n $p processes" >&2
    pgrep -ax "$p" >&2
    fail=1
  fi
done
tmp=${TMPDIR:-/tmp}
d=$(find "$tmp/nextstate-bwrap" -mindepth 1 -maxdepth 1 2>/dev/null | wc -l)
if [ "$d" -gt 0 ]; then
  echo "leak: $d bwrap state directories under $tmp/nextstate-bwrap" >&2
  fail=1
fi
left=$(find "$tmp" -maxdepth 1 -name 'nextstate-*' ! -name nextstate-bwrap 2>/dev/null)
if [ -n "$left" ]; then
  echo "leak: temporary directories of the project:" >&2
  echo "$left" >&2
  fail=1
fi
[ "$fail" -eq 0 ] && echo "no leaks: no labelled containers or images, no bwrap/Xvfb/Chromium processes, no bwrap state or temporary directories"
exit "$fail"
