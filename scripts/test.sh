#!/usr/bin/env bash
# `npm test`: the whole suite (unit, real-Docker integration, kubectl e2e) against a private Docker
# engine started here and removed afterwards. Ends with the line `N passed, N failed`.
# Extra arguments go to tap, e.g. `npm test -- test/integration/exec.test.ts`. A run of unit tests
# only (`npm test -- test/unit`, every path under test/unit) needs no engine, no root and none of
# the packages below: it starts nothing (as `npm run test:unit`, which also skips coverage).
# NODELET_TEST_ENGINE=podman runs them against a private Podman API service instead of dockerd.
set -uo pipefail
cd "$(dirname "$0")/.."
LOG_NAME=test
# shellcheck source=scripts/lib.sh
. scripts/lib.sh
engine=${NODELET_TEST_ENGINE:-docker}
case "$engine" in
  docker) start=private ;;
  podman) start=podman ;;
  *) echo "NODELET_TEST_ENGINE must be docker or podman, not $engine" >&2; exit 2 ;;
esac
paths=0; units=0
for a in "$@"; do
  case $a in -*) ;; test/unit*) paths=$((paths + 1)); units=$((units + 1)) ;; *) paths=$((paths + 1)) ;; esac
done
unit_only=
[ "$paths" -gt 0 ] && [ "$units" -eq "$paths" ] && unit_only=1

if [ -z "$unit_only" ]; then
  # The CNI tests run Debian's plugins inside a network namespace of their own (ip, iptables, nsenter).
  missing=()
  [ -x /usr/lib/cni/bridge ] || missing+=(containernetworking-plugins)
  command -v ip >/dev/null 2>&1 || missing+=(iproute2)
  command -v iptables >/dev/null 2>&1 || missing+=(iptables)
  # fabric8's Java client (test/e2e/fabric8-watch.test.ts) is resolved with Maven and run on a JDK.
  command -v java >/dev/null 2>&1 || missing+=(default-jdk-headless)
  command -v mvn >/dev/null 2>&1 || missing+=(maven)
  install_missing "${missing[@]}"
  state=$(mktemp -d "/tmp/nodelet-test-$engine.XXXXXX")
  cleanup() { scripts/docker-engine.sh stop "$state"; }
  trap cleanup EXIT
  # The engine may pull only from registries on loopback (scripts/docker-engine.sh, offline_env):
  # a test that names an image from elsewhere fails its pull at once, and nothing leaves the machine.
  export NODELET_ENGINE_OFFLINE=1
  DOCKER_HOST=$(scripts/docker-engine.sh "$start" "$state") || exit 1
  export DOCKER_HOST
  scripts/docker-engine.sh images || exit 1
  # The Go-built fixtures (control plane, kube-proxy, CoreDNS) compile here, before any test enters a
  # network namespace of its own (nothing in one reaches the Go module proxy); cached by version, so
  # this is a no-op after the first run.
  scripts/control-plane.sh build >/dev/null || exit 1
  scripts/cluster-dns.sh build >/dev/null || exit 1
  scripts/jvm-client.sh build >/dev/null || exit 1
else
  # Unit tests never reach an engine: an inherited DOCKER_HOST must not make one look available.
  unset DOCKER_HOST
fi

log=$(mktemp)
# Coverage floors live in .taprc.
npx tap --coverage-report=text-summary "$@" 2>&1 | tee "$log"
rc=${PIPESTATUS[0]}

# tap's final summary line looks like `# { total: 120, pass: 118, fail: 2 }`.
summary=$(grep -E '^# \{ total: ' "$log" | tail -n 1)
total=$(sed -nE 's/.*total: ([0-9]+).*/\1/p' <<<"$summary")
pass=$(sed -nE 's/.*pass: ([0-9]+).*/\1/p' <<<"$summary")
skip=$(sed -nE 's/.*skip: ([0-9]+).*/\1/p' <<<"$summary")
todo=$(sed -nE 's/.*todo: ([0-9]+).*/\1/p' <<<"$summary")
total=${total:-0}; pass=${pass:-0}; skip=${skip:-0}; todo=${todo:-0}
failed=$((total - pass - skip - todo))
if [ "$rc" -ne 0 ] && [ "$failed" -eq 0 ]; then failed=1; fi
rm -f "$log"
echo "$pass passed, $failed failed"
exit "$rc"
