#!/usr/bin/env bash
# An image registry for the conformance run (scripts/conformance.sh): the CNCF distribution
# registry, built from its Go module, serving plain HTTP on a loopback address, so the e2e suite's
# images are really pulled (Docker treats 127.0.0.0/8 as an insecure registry: no TLS needed).
#
#   scripts/image-registry.sh build                    build the registry and its htpasswd helper
#                                                      from test/image-registry (cached by version);
#                                                      print their directory
#   scripts/image-registry.sh start DIR ADDR [USER PASSWORD]
#                                                      serve a registry on ADDR (host:port) with its
#                                                      storage, config and log in DIR; with USER and
#                                                      PASSWORD every request needs HTTP Basic
#                                                      authentication as USER (distribution's
#                                                      htpasswd access controller); waits until
#                                                      `GET /v2/` answers
#   scripts/image-registry.sh stop DIR                 stop it (DIR stays, with registry.log)
#
# The binaries go to ${NODELET_CACHE:-~/.cache/nodelet}/image-registry/<version>/. The registry
# exports no traces (OTEL_TRACES_EXPORTER=none: its default OTLP exporter would dial out).
set -euo pipefail

LOG_NAME=image-registry
# shellcheck source=scripts/lib.sh
. "$(dirname "$0")/lib.sh"
MODULE=$ROOT/test/image-registry
TIMEOUT=${NODELET_IMAGE_REGISTRY_TIMEOUT:-30}

VERSION=$(awk '$1 == "github.com/distribution/distribution/v3" && $2 ~ /^v/ { print $2; exit }' "$MODULE/go.mod")
[ -n "$VERSION" ] || die "no version of github.com/distribution/distribution/v3 in $MODULE/go.mod"
BIN_DIR=$NODELET_CACHE_DIR/image-registry/$VERSION

have_binaries() { [ -x "$BIN_DIR/registry" ] && [ -x "$BIN_DIR/htpasswd" ]; }

build() {
  if have_binaries; then echo "$BIN_DIR"; return 0; fi
  need_go "the registry $VERSION"
  build_lock "$BIN_DIR"
  if have_binaries; then echo "$BIN_DIR"; return 0; fi
  local start=$SECONDS
  export CGO_ENABLED=0 GOTOOLCHAIN=local GOFLAGS="${GOFLAGS:+$GOFLAGS }-mod=mod"
  log "building the distribution registry $VERSION with $(go version | awk '{print $3}')"
  # Temp names, renamed when complete: a killed build never leaves a half binary behind.
  (cd "$MODULE" && go build -trimpath -ldflags "-s -w" -o "$BIN_DIR/.registry.tmp.$$" github.com/distribution/distribution/v3/cmd/registry &&
    go build -trimpath -ldflags "-s -w" -o "$BIN_DIR/.htpasswd.tmp.$$" ./htpasswd) ||
    { rm -f "$BIN_DIR"/.*.tmp.$$; die "building the registry failed"; }
  mv -f "$BIN_DIR/.registry.tmp.$$" "$BIN_DIR/registry"
  mv -f "$BIN_DIR/.htpasswd.tmp.$$" "$BIN_DIR/htpasswd"
  log "built the registry in $((SECONDS - start)) s"
  echo "$BIN_DIR"
}

answers() {
  # 200 when open; 401 when it asks for credentials (and then it must name the Basic realm).
  local code
  code=$(curl -s -o /dev/null -w '%{http_code}' --noproxy '*' "http://$1/v2/") || return 1
  [ "$code" = 200 ] || [ "$code" = 401 ]
}

start() {
  local dir=$1 addr=$2 user=${3:-} password=${4:-}
  [[ $addr =~ ^127\.[0-9]+\.[0-9]+\.[0-9]+:[0-9]+$ ]] || die "ADDR $addr: a loopback host:port is needed (Docker pulls over plain HTTP only from 127.0.0.0/8)"
  have_binaries || die "no registry in $BIN_DIR: run \`$0 build\` first"
  mkdir -p "$dir/data"
  dir=$(cd "$dir" && pwd)
  local auth=''
  if [ -n "$user" ]; then
    "$BIN_DIR/htpasswd" "$user" "$password" >"$dir/htpasswd"
    auth="auth:
  htpasswd:
    realm: nodelet-conformance
    path: $dir/htpasswd"
  fi
  cat >"$dir/config.yml" <<EOF
version: 0.1
log:
  level: info
storage:
  filesystem:
    rootdirectory: $dir/data
  delete:
    enabled: true
http:
  addr: $addr
  headers:
    X-Content-Type-Options: [nosniff]
$auth
EOF
  OTEL_TRACES_EXPORTER=none setsid "$BIN_DIR/registry" serve "$dir/config.yml" </dev/null >"$dir/registry.log" 2>&1 &
  echo $! >"$dir/registry.pid"
  local deadline=$((SECONDS + TIMEOUT))
  until answers "$addr"; do
    kill -0 "$(cat "$dir/registry.pid")" 2>/dev/null || { tail -20 "$dir/registry.log" >&2; die "the registry on $addr exited"; }
    [ "$SECONDS" -lt "$deadline" ] || { tail -20 "$dir/registry.log" >&2; die "the registry on $addr did not answer in $TIMEOUT s"; }
    sleep 0.2
  done
  log "registry $VERSION on http://$addr${user:+ (Basic authentication as $user)}, storage $dir/data"
}

stop() {
  local pidfile=$1/registry.pid pid
  [ -f "$pidfile" ] || return 0
  pid=$(cat "$pidfile")
  kill -TERM "$pid" 2>/dev/null || true
  for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  kill -KILL "$pid" 2>/dev/null || true
  rm -f "$pidfile"
}

cmd=${1:-}
[ $# -eq 0 ] || shift
case $cmd in
  build) [ $# -eq 0 ] || usage; build ;;
  start) { [ $# -eq 2 ] || [ $# -eq 4 ]; } || usage; start "$@" ;;
  stop) [ $# -eq 1 ] || usage; stop "$1" ;;
  *) usage ;;
esac
