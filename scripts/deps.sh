#!/usr/bin/env bash
# Installs what `make demo` and `make test` need on a fresh Debian machine,
# and does nothing that is already done. Go itself (1.26 or newer) comes with
# the machine; everything else is installed here.
set -euo pipefail
cd "$(dirname "$0")/.."

need_go="1.26"
if ! command -v go >/dev/null 2>&1; then
  echo "deps: Go $need_go or newer is required (https://go.dev/dl/); /usr/local/go/bin must be on PATH" >&2
  exit 1
fi
have=$(go env GOVERSION | sed 's/^go//')
if [ "$(printf '%s\n%s\n' "$need_go" "$have" | sort -V | head -n1)" != "$need_go" ]; then
  echo "deps: Go $have is too old: nextstate needs Go $need_go or newer" >&2
  exit 1
fi

# apt packages: gcc for the race detector. Later env kinds add theirs here.
pkgs=(gcc)
missing=()
for p in "${pkgs[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" -ne 0 ]; then SUDO=sudo; else SUDO=; fi
  echo "deps: installing ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi

go mod download
