#!/usr/bin/env bash
# build.sh DIR OUT: builds the test instances of DIR (testdata/python,
# testdata/go) into OUT.
#
# Each subdirectory NAME of DIR holds base/ (the repository's files at the base
# commit), fix.patch (the gold patch), test.patch (the tests that judge a
# fix) and instance.json (the rest of the instance). For each, build.sh
# makes OUT/NAME a git repository of base/ at one commit (fixed author and
# date, so the commit is the same on every machine), and appends the
# instance, with base_commit, patch, test_patch and source filled in, to
# OUT/instances.jsonl. Needs git and python3.
set -euo pipefail
here=$(cd "${1:?usage: build.sh DIR OUT}" && pwd)
out=${2:?usage: build.sh DIR OUT}
mkdir -p "$out"
out=$(cd "$out" && pwd)
: >"$out/instances.jsonl"
export GIT_AUTHOR_NAME=nextstate GIT_AUTHOR_EMAIL=swe@nextstate.invalid
export GIT_COMMITTER_NAME=nextstate GIT_COMMITTER_EMAIL=swe@nextstate.invalid
export GIT_AUTHOR_DATE=2025-01-01T00:00:00Z GIT_COMMITTER_DATE=2025-01-01T00:00:00Z GIT_CONFIG_NOSYSTEM=1
for dir in "$here"/*/; do
	name=$(basename "$dir")
	[ -f "$dir/instance.json" ] || continue
	rm -rf "${out:?}/$name"
	cp -R "$dir/base" "$out/$name"
	git -C "$out/$name" init -q
	git -C "$out/$name" add -A
	git -C "$out/$name" commit -q -m "$name: base"
	sha=$(git -C "$out/$name" rev-parse HEAD)
	python3 - "$dir" "$sha" "$name" >>"$out/instances.jsonl" <<'PY'
import json, os, sys
d, sha, name = sys.argv[1:]
inst = json.load(open(d + "/instance.json"))
inst["base_commit"] = sha
inst["patch"] = open(d + "/fix.patch").read()
inst["test_patch"] = open(d + "/test.patch").read()
inst["source"] = name
inst.setdefault("language", "go" if os.path.exists(d + "/base/go.mod") else "python")
print(json.dumps(inst))
PY
done
