#!/usr/bin/env bash
# CoreDNS, the cluster DNS add-on, for a test cluster of nodelets (pods and Services answer by name).
#
#   scripts/cluster-dns.sh build           build CoreDNS from the wrapper module test/cluster-dns
#                                          (cached by version) and print the binary's path
#   scripts/cluster-dns.sh deploy KUBECONFIG [DNS_IP]
#                                          make the image in the engine at $DOCKER_HOST, apply
#                                          test/cluster-dns/coredns.yaml (kube-dns Service on DNS_IP,
#                                          default 10.0.0.10) and wait until CoreDNS is Ready
#
# The binary goes to ${NODELET_CACHE:-~/.cache/nodelet}/coredns/<version>/coredns, a static build
# (CGO_ENABLED=0), and the image nodelet.local/coredns:<version> holds only it, as the upstream
# image (a distroless one) does. The nodes must run with --cluster-dns DNS_IP; Services need
# kube-proxy (scripts/control-plane.sh start-proxy), CoreDNS reaches the apiserver through the
# `kubernetes` Service.
set -euo pipefail

LOG_NAME=cluster-dns
# shellcheck source=scripts/lib.sh
. "$(dirname "$0")/lib.sh"
MODULE=$ROOT/test/cluster-dns
TIMEOUT=${NODELET_CLUSTER_DNS_TIMEOUT:-120}

VERSION=$(awk '{ for (i = 1; i < NF; i++) if ($i == "github.com/coredns/coredns" && $(i + 1) ~ /^v/) { print $(i + 1); exit } }' "$MODULE/go.mod")
[ -n "$VERSION" ] || die "no version of github.com/coredns/coredns in $MODULE/go.mod"
BIN=$NODELET_CACHE_DIR/coredns/$VERSION/coredns
IMAGE=nodelet.local/coredns:$VERSION

build() {
  if [ -x "$BIN" ]; then echo "$BIN"; return 0; fi
  need_go "CoreDNS $VERSION"
  build_lock "$(dirname "$BIN")"
  if [ -x "$BIN" ]; then echo "$BIN"; return 0; fi
  local start=$SECONDS tmp="$BIN.tmp.$$"
  log "building CoreDNS $VERSION with $(go version | awk '{print $3}')"
  if ! (cd "$MODULE" && CGO_ENABLED=0 GOTOOLCHAIN=local GOFLAGS="${GOFLAGS:+$GOFLAGS }-mod=mod" \
    go build -trimpath -ldflags "-s -w" -o "$tmp" github.com/coredns/coredns); then
    rm -f "$tmp"; die "building CoreDNS failed"
  fi
  mv -f "$tmp" "$BIN"
  log "built CoreDNS in $((SECONDS - start)) s"
  echo "$BIN"
}

image() {
  docker image inspect "$IMAGE" >/dev/null 2>&1 && return 0
  [ -x "$BIN" ] || die "no $BIN: run \`$0 build\` first"
  local r; r=$(mktemp -d)
  mkdir -p "$r/etc/coredns" "$r/tmp"
  cp "$BIN" "$r/coredns"
  echo 'nonroot:x:65532:65532::/home/nonroot:/sbin/nologin' >"$r/etc/passwd"
  tar -C "$r" -c . | docker import --change 'EXPOSE 53 53/udp' --change 'ENTRYPOINT ["/coredns"]' - "$IMAGE" >/dev/null
  rm -rf "$r"
  log "made $IMAGE"
}

ready() {
  [ "$(kubectl --kubeconfig "$1" -n kube-system get deployment coredns -o 'jsonpath={.status.readyReplicas}' 2>/dev/null)" = 1 ]
}

deploy() {
  local kubeconfig=$1 dns_ip=${2:-10.0.0.10}
  [[ $dns_ip =~ ^[0-9]+\.[0-9]+\.[0-9]+\.[0-9]+$ ]] || die "DNS_IP $dns_ip: an IPv4 address is needed"
  [ -n "${DOCKER_HOST:-}" ] || die "DOCKER_HOST must name the nodes' engine"
  command -v kubectl >/dev/null 2>&1 || die "kubectl is needed"
  image
  sed -e "s#@IMAGE@#$IMAGE#g" -e "s#@DNS_IP@#$dns_ip#g" "$MODULE/coredns.yaml" |
    kubectl --kubeconfig "$kubeconfig" apply -f - >/dev/null
  if ! wait_until "$TIMEOUT" 0.2 ready "$kubeconfig"; then
    log "CoreDNS not Ready after $TIMEOUT s:"
    kubectl --kubeconfig "$kubeconfig" -n kube-system get pods -l k8s-app=kube-dns -o wide >&2 || true
    kubectl --kubeconfig "$kubeconfig" -n kube-system logs -l k8s-app=kube-dns --tail=20 >&2 || true
    exit 1
  fi
  log "CoreDNS $VERSION Ready behind kube-dns $dns_ip"
}

case ${1:-} in
  build) [ $# -eq 1 ] || usage; build ;;
  deploy) [ $# -ge 2 ] && [ $# -le 3 ] || usage; deploy "$2" "${3:-}" ;;
  *) usage ;;
esac
