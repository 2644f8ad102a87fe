# shellcheck shell=bash
# The shell code scripts/*.sh share; sourced, never run. A script names itself in LOG_NAME (the
# prefix of its messages) and sources this file after its `set` line:
#
#   LOG_NAME=cluster-dns
#   . "$(dirname "$0")/lib.sh"
#
# It sets ROOT (the repository), NODELET_CACHE_DIR (${NODELET_CACHE:-~/.cache/nodelet}, the root
# of every build cache) and defines the functions below; it changes no shell option.

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
NODELET_CACHE_DIR=${NODELET_CACHE:-$HOME/.cache/nodelet}

log() { echo "$LOG_NAME: $*" >&2; }
die() { log "$*"; exit 1; }

# The script's header comment (from line 2 to its `set -euo` line) on stderr, exit 2.
usage() { sed -n '2,/^set -euo/p' "$0" | grep '^#' | sed 's/^# \{0,1\}//' >&2; exit 2; }

# install_missing [APT-OPTION...] PACKAGE...: installs Debian's PACKAGEs (nothing when none is
# named); only root may, anyone else is told to install them first.
install_missing() {
  local options=()
  while [ $# -gt 0 ] && [[ $1 == -* ]]; do options+=("$1"); shift; done
  [ $# -gt 0 ] || return 0
  [ "$(id -u)" = 0 ] || die "missing $* and not root: install them first"
  log "installing $* from Debian"
  export DEBIAN_FRONTEND=noninteractive
  { apt-get update -qq && apt-get install -y -qq "${options[@]}" "$@"; } >&2 || die "installing $* failed"
}

# need_go WHAT [HINT]: Go on PATH (also when only /usr/local/go/bin has it), or die: WHAT cannot be
# built, then HINT.
need_go() {
  if ! command -v go >/dev/null 2>&1 && [ -x /usr/local/go/bin/go ]; then PATH=$PATH:/usr/local/go/bin; fi
  command -v go >/dev/null 2>&1 || die "Go is needed to build $1 and \`go\` is not on PATH${2:-}"
}

# build_lock DIR: holds DIR/.build.lock (on descriptor 9) until the script exits, so parallel
# callers build once: one compiles, the others wait for it and then find its result.
build_lock() {
  mkdir -p "$1"
  exec 9>"$1/.build.lock"
  flock 9
}

# k8s_module: the Kubernetes pin NODELET_K8S picks, as K8S_PIN and MODULE. Unset (or 1.37), the
# wrapper module test/control-plane (k8s.io/kubernetes v1.37.2), which CI runs; 1.34,
# test/control-plane-1.34 (v1.34.4), the previous pin, runnable on demand. Each version has a
# cache directory of its own.
k8s_module() {
  K8S_PIN=${NODELET_K8S:-1.37}
  case $K8S_PIN in
    1.37) MODULE=$ROOT/test/control-plane ;;
    *) MODULE=$ROOT/test/control-plane-$K8S_PIN ;;
  esac
}

# module_version PATH: the version $MODULE/go.mod requires of module PATH.
module_version() {
  local v
  [ -f "$MODULE/go.mod" ] || die "NODELET_K8S=${NODELET_K8S:-}: no wrapper module $MODULE (1.37 or 1.34)"
  v=$(awk -v m="$1" '$1 == m && $2 ~ /^v/ { print $2; exit }' "$MODULE/go.mod")
  [ -n "$v" ] || die "no version of $1 in $MODULE/go.mod"
  echo "$v"
}

# k8s_ldflags VERSION: the linker flags that stamp Kubernetes binaries with VERSION
# (k8s.io/component-base/version), as the release build does; the suite logs and compares them.
k8s_ldflags() {
  local minor=${1#v1.}; minor=${minor%%.*}
  local ld="-s -w -X k8s.io/component-base/version.gitVersion=$1 -X k8s.io/component-base/version.gitMajor=1"
  ld+=" -X k8s.io/component-base/version.gitMinor=$minor -X k8s.io/component-base/version.gitTreeState=clean"
  ld+=" -X k8s.io/component-base/version.buildDate=2026-01-01T00:00:00Z"
  echo "$ld"
}

# free_ports N: N free loopback ports, all different, on one line (the kernel picks them; they are
# released before use).
free_ports() {
  node -e '
    const net = require("net");
    const n = Number(process.argv[1]);
    const servers = [];
    const next = () => {
      if (servers.length === n) {
        console.log(servers.map((s) => s.address().port).join(" "));
        for (const s of servers) s.close();
        return;
      }
      const s = net.createServer();
      s.listen(0, "127.0.0.1", () => { servers.push(s); next(); });
    };
    next();' "$1"
}

# wait_until SECONDS DELAY CMD...: runs CMD every DELAY seconds until it succeeds (0), or until
# SECONDS have passed (1).
wait_until() {
  local deadline=$((SECONDS + $1)) delay=$2
  shift 2
  until "$@"; do
    [ "$SECONDS" -lt "$deadline" ] || return 1
    sleep "$delay"
  done
}
