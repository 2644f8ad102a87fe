#!/usr/bin/env bash
# A real Kubernetes control plane (etcd, kube-apiserver, kube-controller-manager, kube-scheduler)
# on 127.0.0.1, for nodelet's cluster-mode tests, and kube-proxy for a test cluster's namespace.
#
#   scripts/control-plane.sh build                  build the binaries (the four, kube-proxy and
#                                                   kubectl) from test/control-plane (cached by
#                                                   version) and print their directory
#   scripts/control-plane.sh build-kubelet          build the kubelet of the same pin into the same
#                                                   directory (the bench's peer; not part of `build`,
#                                                   which CI runs) and print its path
#   scripts/control-plane.sh start DIR              make a PKI in DIR, start everything, wait until
#                                                   pods can be created; prints DIR/admin.kubeconfig
#   scripts/control-plane.sh start-proxy DIR NODE   start kube-proxy (iptables mode) as NODE's; only
#                                                   inside a network namespace other than the
#                                                   machine's, and with the apiserver on an address
#                                                   pods reach (NODELET_APISERVER_ADDRESS at start)
#   scripts/control-plane.sh node-kubeconfig DIR N  issue system:node:N (group system:nodes) and
#                                                   print DIR/node-N.kubeconfig
#   scripts/control-plane.sh stop-apiserver DIR     stop only kube-apiserver (an outage)
#   scripts/control-plane.sh start-apiserver DIR    start it again with the same flags and port
#   scripts/control-plane.sh stop DIR               stop every process and delete DIR
#
# The binaries go to ${NODELET_CACHE:-~/.cache/nodelet}/control-plane/<k8s>-etcd<etcd>/bin. They are
# built with the machine's `go` from the wrapper module test/control-plane, which pins
# k8s.io/kubernetes and go.etcd.io/etcd/server/v3 (NODELET_K8S=1.34: test/control-plane-1.34, the
# previous pin). kubectl of the same tag is built beside them for the e2e tests' kubectl matrix
# (test/helpers/kubectl.ts). Every process listens on 127.0.0.1 only (but see
# NODELET_APISERVER_ADDRESS below); each one's pid and log are DIR/<name>.pid and DIR/<name>.log,
# and DIR/env holds the URLs and paths.
#
# NODELET_APISERVER_ADDRESS=IP at `start` serves and advertises kube-apiserver on IP instead (the
# test cluster's namespace puts 10.200.0.10 on its `lo`): the `kubernetes` Service then has that
# endpoint (the default lease reconciler), so pods reach the apiserver through kube-proxy.
#
# NODELET_CONTROL_PLANE_BOOTSTRAP=1 at `start` sets up TLS bootstrap as kubeadm does: bootstrap
# token authentication, a token Secret in kube-system and DIR/bootstrap.kubeconfig with it, the
# RBAC that lets system:bootstrappers create node CSRs (auto-approved) and system:nodes renew
# theirs, the bootstrapsigner and tokencleaner controllers, and --kubelet-certificate-authority
# (the apiserver verifies kubelets' serving certificates, which kubelet-serving CSRs get from the
# cluster CA). NODELET_CLUSTER_SIGNING_DURATION (e.g. 10m) shortens the certificates CSRs get.
set -euo pipefail

LOG_NAME=control-plane
# shellcheck source=scripts/lib.sh
. "$(dirname "$0")/lib.sh"
# NODELET_K8S picks the Kubernetes pin (lib.sh, k8s_module).
k8s_module
COMPONENTS=(kube-apiserver etcd kube-controller-manager kube-scheduler kube-proxy kubectl)
TIMEOUT=${NODELET_CONTROL_PLANE_TIMEOUT:-60}

# ---------------------------------------------------------------------------------------------
# Versions and the binary cache

K8S_VERSION=$(module_version k8s.io/kubernetes)
ETCD_VERSION=$(module_version go.etcd.io/etcd/server/v3)
BIN_DIR=$NODELET_CACHE_DIR/control-plane/$K8S_VERSION-etcd${ETCD_VERSION#v}/bin

have_binaries() {
  local c
  for c in "${COMPONENTS[@]}"; do [ -x "$BIN_DIR/$c" ] || return 1; done
}

build() {
  if have_binaries; then echo "$BIN_DIR"; return 0; fi
  build_components "${COMPONENTS[@]}"
  echo "$BIN_DIR"
}

# The real kubelet (cmd/kubelet) of the pin, for the bench's "nodelet vs the kubelet" part: built
# like the control plane (CGO_ENABLED=0, the same version stamping), cached beside it.
build_kubelet() {
  [ -x "$BIN_DIR/kubelet" ] || build_components kubelet
  echo "$BIN_DIR/kubelet"
}

# build_components NAME...: builds each missing binary into $BIN_DIR under a lock.
build_components() {
  need_go "the control plane ($K8S_VERSION)" ": install Go >= 1.26 (1.24 for NODELET_K8S=1.34)"
  mkdir -p "$BIN_DIR"
  # Parallel test files may all ask for a build: one compiles, the others wait for it.
  build_lock "$BIN_DIR"
  local ld; ld=$(k8s_ldflags "$K8S_VERSION")
  export CGO_ENABLED=0 GOTOOLCHAIN=local GOFLAGS="${GOFLAGS:+$GOFLAGS }-mod=mod"
  log "building Kubernetes $K8S_VERSION and etcd $ETCD_VERSION with $(go version | awk '{print $3}') into $BIN_DIR (a cold build takes a while)"
  local c pkg tmp flags
  for c in "$@"; do
    [ -x "$BIN_DIR/$c" ] && continue
    case $c in
      etcd) pkg=go.etcd.io/etcd/server/v3; flags=(-trimpath) ;;
      *) pkg=k8s.io/kubernetes/cmd/$c; flags=(-trimpath -ldflags "$ld") ;;
    esac
    # A temp name, renamed when complete: a killed build never leaves a half binary behind.
    tmp="$BIN_DIR/.$c.tmp.$$"
    local start=$SECONDS
    if ! (cd "$MODULE" && go build "${flags[@]}" -o "$tmp" "$pkg"); then
      rm -f "$tmp"; die "building $c failed"
    fi
    mv -f "$tmp" "$BIN_DIR/$c"
    log "built $c in $((SECONDS - start)) s"
  done
}

# ---------------------------------------------------------------------------------------------
# Helpers for start/stop

abs_dir() { mkdir -p "$1" && (cd "$1" && pwd); }

ssl() {
  local err
  err=$(openssl "$@" 2>&1 >/dev/null) || die "openssl $1 failed: $err"
}

# issue NAME SUBJECT EXT...: an EC key and a certificate signed by the CA in $PKI (ca, or the
# one $ISSUER names).
issue() {
  local name=$1 subj=$2 ca=${ISSUER:-ca}; shift 2
  ssl req -new -nodes -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -subj "$subj" \
    -keyout "$PKI/$name.key" -out "$PKI/$name.csr"
  printf '%s\n' "$@" >"$PKI/$name.ext"
  ssl x509 -req -in "$PKI/$name.csr" -CA "$PKI/$ca.crt" -CAkey "$PKI/$ca.key" -CAcreateserial \
    -days 30 -extfile "$PKI/$name.ext" -out "$PKI/$name.crt"
  rm -f "$PKI/$name.csr" "$PKI/$name.ext"
}

client_cert() { issue "$1" "$2" 'basicConstraints=CA:FALSE' 'keyUsage=critical,digitalSignature' 'extendedKeyUsage=clientAuth'; }

# kubeconfig FILE USER CERT KEY
kubeconfig() {
  cat >"$1" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: nodelet-test
  cluster:
    server: $APISERVER_URL
    certificate-authority: $PKI/ca.crt
users:
- name: $2
  user:
    client-certificate: $3
    client-key: $4
contexts:
- name: $2
  context:
    cluster: nodelet-test
    user: $2
current-context: $2
EOF
}

load_env() {
  DIR=$(cd "$1" 2>/dev/null && pwd) || die "$1: no such directory"
  [ -f "$DIR/env" ] || die "$DIR has no control plane (no $DIR/env)"
  # shellcheck source=/dev/null
  . "$DIR/env"
  PKI=$DIR/pki
}

# Fails with the tail of the component's log.
fail_component() {
  local name=$1; shift
  log "$name: $*; the end of $DIR/$name.log:"
  tail -n 25 "$DIR/$name.log" >&2 2>/dev/null || true
  exit 1
}

# spawn NAME ARGS...: runs $BIN_DIR/NAME in the background, detached from our stdio.
spawn() {
  local name=$1; shift
  "$BIN_DIR/$name" "$@" </dev/null >>"$DIR/$name.log" 2>&1 &
  echo $! >"$DIR/$name.pid"
}

alive() { kill -0 "$(cat "$DIR/$1.pid")" 2>/dev/null; }

# wait_for NAME WHAT CMD...: polls CMD until it succeeds; fails early if NAME exits.
wait_for() {
  local name=$1 what=$2; shift 2
  local deadline=$((SECONDS + TIMEOUT)) delay=0.05
  until "$@" >/dev/null 2>&1; do
    alive "$name" || fail_component "$name" "exited while waiting for $what"
    [ "$SECONDS" -lt "$deadline" ] || fail_component "$name" "no $what after ${TIMEOUT} s"
    sleep "$delay"
    [ "$delay" = 0.05 ] && delay=0.1 || delay=0.2
  done
}

# admin_curl PATH [CURL ARGS...]: the apiserver as cluster-admin; fails on HTTP errors.
admin_curl() {
  local path=$1; shift
  curl -sSf --max-time 10 --cacert "$PKI/ca.crt" --cert "$PKI/admin.crt" --key "$PKI/admin.key" "$@" "$APISERVER_URL$path"
}

readyz() { [ "$(admin_curl /readyz)" = ok ]; }
etcd_health() { curl -sSf --max-time 5 "http://127.0.0.1:$ETCD_CLIENT_PORT/health" | grep -q '"health":"true"'; }
component_healthz() { [ "$(curl -sSfk --max-time 5 "https://127.0.0.1:$1/healthz")" = ok ]; }

apiserver_args() {
  APISERVER_ARGS=(
    --etcd-servers="http://127.0.0.1:$ETCD_CLIENT_PORT"
    --bind-address="$APISERVER_ADDRESS" --advertise-address="$APISERVER_ADDRESS" --secure-port="$APISERVER_PORT"
    --tls-cert-file="$PKI/apiserver.crt" --tls-private-key-file="$PKI/apiserver.key"
    --client-ca-file="$PKI/ca.crt"
    --service-cluster-ip-range=10.0.0.0/24
    --service-account-issuer=https://kubernetes.default.svc
    --service-account-key-file="$PKI/sa.pub" --service-account-signing-key-file="$PKI/sa.key"
    --authorization-mode=Node,RBAC
    --enable-admission-plugins=NodeRestriction
    --allow-privileged=true
    --token-auth-file="$PKI/tokens.csv"
    --kubelet-client-certificate="$PKI/apiserver-kubelet-client.crt"
    --kubelet-client-key="$PKI/apiserver-kubelet-client.key"
    --kubelet-preferred-address-types=InternalIP
    # The aggregation layer's front proxy (the identity it forwards to extension apiservers such as
    # e2e's sample-apiserver, which trust it through extension-apiserver-authentication).
    --requestheader-client-ca-file="$PKI/front-proxy-ca.crt"
    --requestheader-allowed-names=front-proxy-client
    --requestheader-username-headers=X-Remote-User
    --requestheader-group-headers=X-Remote-Group
    --requestheader-extra-headers-prefix=X-Remote-Extra-
    --proxy-client-cert-file="$PKI/front-proxy-client.crt" --proxy-client-key-file="$PKI/front-proxy-client.key"
    --profiling=false
  )
  [ "${BOOTSTRAP:-}" != 1 ] || APISERVER_ARGS+=(--enable-bootstrap-token-auth --kubelet-certificate-authority="$PKI/ca.crt")
  # The "kubernetes" Endpoints may not hold a loopback address: do not keep retrying to write it.
  [ "$APISERVER_ADDRESS" != 127.0.0.1 ] || APISERVER_ARGS+=(--endpoint-reconciler-type=none)
}

run_apiserver() {
  apiserver_args
  spawn kube-apiserver "${APISERVER_ARGS[@]}"
  wait_for kube-apiserver "/readyz ok on $APISERVER_URL" readyz
}

# ---------------------------------------------------------------------------------------------
# Subcommands

start() {
  local t0=$SECONDS
  have_binaries || die "binaries missing in $BIN_DIR: run \`$0 build\` first"
  command -v openssl >/dev/null 2>&1 || die "openssl is needed"
  command -v curl >/dev/null 2>&1 || die "curl is needed"
  DIR=$(abs_dir "$1")
  [ -z "$(ls -A "$DIR")" ] || die "$DIR is not empty"
  PKI=$DIR/pki
  # A start that fails stops what it started; DIR (with the logs) stays for `stop DIR`.
  trap 'stop_components kube-scheduler kube-controller-manager kube-apiserver etcd' EXIT
  mkdir -p "$PKI" "$DIR/etcd"
  chmod 700 "$DIR/etcd"

  read -r ETCD_CLIENT_PORT ETCD_PEER_PORT APISERVER_PORT KCM_PORT SCHEDULER_PORT <<<"$(free_ports 5)"
  [ -n "$SCHEDULER_PORT" ] || die "could not pick free ports"
  APISERVER_ADDRESS=${NODELET_APISERVER_ADDRESS:-127.0.0.1}
  [[ $APISERVER_ADDRESS =~ ^[0-9]+\.[0-9]+\.[0-9]+\.[0-9]+$ ]] || die "NODELET_APISERVER_ADDRESS=$APISERVER_ADDRESS: an IPv4 address is needed"
  APISERVER_URL=https://$APISERVER_ADDRESS:$APISERVER_PORT
  BOOTSTRAP=${NODELET_CONTROL_PLANE_BOOTSTRAP:-}

  # PKI: one CA signs the serving cert and every client identity.
  ssl req -x509 -nodes -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -days 30 -subj /CN=nodelet-test-ca \
    -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign,cRLSign,digitalSignature \
    -keyout "$PKI/ca.key" -out "$PKI/ca.crt"
  issue apiserver /CN=kube-apiserver 'basicConstraints=CA:FALSE' 'keyUsage=critical,digitalSignature,keyEncipherment' \
    'extendedKeyUsage=serverAuth' \
    "subjectAltName=IP:127.0.0.1,IP:$APISERVER_ADDRESS,IP:10.0.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc"
  client_cert admin '/O=system:masters/CN=nodelet-test-admin'
  client_cert apiserver-kubelet-client '/O=system:masters/CN=kube-apiserver-kubelet-client'
  client_cert kube-controller-manager /CN=system:kube-controller-manager
  client_cert kube-scheduler /CN=system:kube-scheduler
  # A CA of its own for the front proxy, as kubeadm makes: a client cert of the main CA cannot
  # pass for the aggregator.
  ssl req -x509 -nodes -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -days 30 -subj /CN=nodelet-test-front-proxy-ca \
    -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign,cRLSign,digitalSignature \
    -keyout "$PKI/front-proxy-ca.key" -out "$PKI/front-proxy-ca.crt"
  ISSUER=front-proxy-ca client_cert front-proxy-client /CN=front-proxy-client
  ssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out "$PKI/sa.key"
  ssl pkey -in "$PKI/sa.key" -pubout -out "$PKI/sa.pub"
  ADMIN_TOKEN=$(openssl rand -hex 16)
  printf '%s,nodelet-test-admin,nodelet-test-admin,"system:masters"\n' "$ADMIN_TOKEN" >"$PKI/tokens.csv"
  chmod 600 "$PKI"/*.key "$PKI/tokens.csv"

  kubeconfig "$DIR/admin.kubeconfig" nodelet-test-admin "$PKI/admin.crt" "$PKI/admin.key"
  kubeconfig "$DIR/kube-controller-manager.kubeconfig" system:kube-controller-manager \
    "$PKI/kube-controller-manager.crt" "$PKI/kube-controller-manager.key"
  kubeconfig "$DIR/kube-scheduler.kubeconfig" system:kube-scheduler "$PKI/kube-scheduler.crt" "$PKI/kube-scheduler.key"

  {
    printf '# Written by scripts/control-plane.sh start; shell-sourceable.\n'
    local v
    for v in DIR BIN_DIR K8S_VERSION ETCD_VERSION APISERVER_ADDRESS APISERVER_URL APISERVER_PORT ETCD_CLIENT_PORT \
      ETCD_PEER_PORT KCM_PORT SCHEDULER_PORT ADMIN_TOKEN BOOTSTRAP; do
      printf '%s=%q\n' "$v" "${!v}"
    done
    printf 'ETCD_URL=%q\n' "http://127.0.0.1:$ETCD_CLIENT_PORT"
    printf 'CA_FILE=%q\nCA_KEY=%q\n' "$PKI/ca.crt" "$PKI/ca.key"
    printf 'ADMIN_KUBECONFIG=%q\nADMIN_CERT=%q\nADMIN_KEY=%q\n' "$DIR/admin.kubeconfig" "$PKI/admin.crt" "$PKI/admin.key"
    printf 'KUBELET_CLIENT_CERT=%q\nKUBELET_CLIENT_KEY=%q\n' "$PKI/apiserver-kubelet-client.crt" "$PKI/apiserver-kubelet-client.key"
  } >"$DIR/env"

  spawn etcd --name default --data-dir "$DIR/etcd" \
    --listen-client-urls "http://127.0.0.1:$ETCD_CLIENT_PORT" --advertise-client-urls "http://127.0.0.1:$ETCD_CLIENT_PORT" \
    --listen-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" --initial-advertise-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" \
    --initial-cluster "default=http://127.0.0.1:$ETCD_PEER_PORT" --unsafe-no-fsync
  wait_for etcd "/health" etcd_health

  run_apiserver
  log "kube-apiserver ready at $APISERVER_URL after $((SECONDS - t0)) s"
  local kcm_args=(--controllers='*')
  if [ "$BOOTSTRAP" = 1 ]; then
    setup_bootstrap
    kcm_args=(--controllers='*,bootstrapsigner,tokencleaner')
  fi
  [ -z "${NODELET_CLUSTER_SIGNING_DURATION:-}" ] || kcm_args+=(--cluster-signing-duration="$NODELET_CLUSTER_SIGNING_DURATION")

  spawn kube-controller-manager \
    --kubeconfig="$DIR/kube-controller-manager.kubeconfig" \
    --use-service-account-credentials=true \
    --service-account-private-key-file="$PKI/sa.key" \
    --root-ca-file="$PKI/ca.crt" \
    --cluster-signing-cert-file="$PKI/ca.crt" --cluster-signing-key-file="$PKI/ca.key" \
    --service-cluster-ip-range=10.0.0.0/24 \
    --allocate-node-cidrs=true --cluster-cidr=10.244.0.0/16 \
    "${kcm_args[@]}" --leader-elect=false \
    --node-monitor-period=2s --node-monitor-grace-period="${NODELET_NODE_MONITOR_GRACE_PERIOD:-16s}" \
    --bind-address=127.0.0.1 --secure-port="$KCM_PORT" --cert-dir="$DIR/kcm-certs" \
    --profiling=false
  spawn kube-scheduler \
    --kubeconfig="$DIR/kube-scheduler.kubeconfig" \
    --leader-elect=false \
    --bind-address=127.0.0.1 --secure-port="$SCHEDULER_PORT" --cert-dir="$DIR/scheduler-certs" \
    --profiling=false

  ensure_node_rbac

  wait_for kube-controller-manager "/healthz on :$KCM_PORT" component_healthz "$KCM_PORT"
  wait_for kube-scheduler "/healthz on :$SCHEDULER_PORT" component_healthz "$SCHEDULER_PORT"
  # Pods need the namespace's default ServiceAccount (ServiceAccount admission) and their
  # projected token volume needs kube-root-ca.crt: both come from the controller-manager.
  wait_for kube-controller-manager "the default ServiceAccount" admin_curl /api/v1/namespaces/default/serviceaccounts/default
  wait_for kube-controller-manager "the kube-root-ca.crt ConfigMap" admin_curl /api/v1/namespaces/default/configmaps/kube-root-ca.crt
  trap - EXIT
  log "control plane $K8S_VERSION ready in $((SECONDS - t0)) s (dir $DIR)"
  echo "$DIR/admin.kubeconfig"
}

# admin_post PATH JSON: creates an object as cluster-admin.
admin_post() { admin_curl "$1" -X POST -H 'Content-Type: application/json' -o /dev/null -d "$2"; }

# binding NAME CLUSTERROLE GROUP: a ClusterRoleBinding of a group.
binding() {
  admin_post /apis/rbac.authorization.k8s.io/v1/clusterrolebindings \
    "{\"apiVersion\":\"rbac.authorization.k8s.io/v1\",\"kind\":\"ClusterRoleBinding\",\"metadata\":{\"name\":\"$1\"},\"roleRef\":{\"apiGroup\":\"rbac.authorization.k8s.io\",\"kind\":\"ClusterRole\",\"name\":\"$2\"},\"subjects\":[{\"apiGroup\":\"rbac.authorization.k8s.io\",\"kind\":\"Group\",\"name\":\"$3\"}]}"
}

# TLS bootstrap as `kubeadm init` and `kubeadm token create` set it up (cmd/kubeadm/app/phases/
# bootstraptoken/node): a token Secret (id.secret, 24 h), its kubeconfig, and the bindings.
setup_bootstrap() {
  local id secret expiration
  id=$(openssl rand -hex 3)
  secret=$(openssl rand -hex 8)
  expiration=$(date -u -d '+1 day' +%Y-%m-%dT%H:%M:%SZ)
  wait_for kube-apiserver "the kube-system namespace" admin_curl /api/v1/namespaces/kube-system
  admin_post /api/v1/namespaces/kube-system/secrets \
    "{\"apiVersion\":\"v1\",\"kind\":\"Secret\",\"metadata\":{\"name\":\"bootstrap-token-$id\",\"namespace\":\"kube-system\"},\"type\":\"bootstrap.kubernetes.io/token\",\"stringData\":{\"token-id\":\"$id\",\"token-secret\":\"$secret\",\"expiration\":\"$expiration\",\"usage-bootstrap-authentication\":\"true\",\"usage-bootstrap-signing\":\"true\",\"auth-extra-groups\":\"system:bootstrappers:kubeadm:default-node-token\",\"description\":\"nodelet test bootstrap token\"}}"
  # Bootstrap identities may create CSRs, whose node client certificates are approved for them;
  # nodes may renew their own client certificates.
  binding kubeadm:kubelet-bootstrap system:node-bootstrapper system:bootstrappers
  binding kubeadm:node-autoapprove-bootstrap system:certificates.k8s.io:certificatesigningrequests:nodeclient system:bootstrappers
  binding kubeadm:node-autoapprove-certificate-rotation system:certificates.k8s.io:certificatesigningrequests:selfnodeclient system:nodes
  cat >"$DIR/bootstrap.kubeconfig" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: nodelet-test
  cluster:
    server: $APISERVER_URL
    certificate-authority: $PKI/ca.crt
users:
- name: tls-bootstrap-token-user
  user:
    token: "$id.$secret"
contexts:
- name: tls-bootstrap-token-user@nodelet-test
  context:
    cluster: nodelet-test
    user: tls-bootstrap-token-user
current-context: tls-bootstrap-token-user@nodelet-test
EOF
  chmod 600 "$DIR/bootstrap.kubeconfig"
  printf 'BOOTSTRAP_KUBECONFIG=%q\n' "$DIR/bootstrap.kubeconfig" >>"$DIR/env"
}

# Whether user system:node:<probe> in group system:nodes may do VERB on GROUP/RESOURCE.
node_allowed() {
  local body
  body=$(printf '{"apiVersion":"authorization.k8s.io/v1","kind":"SubjectAccessReview","spec":{"user":"system:node:nodelet-rbac-probe","groups":["system:nodes","system:authenticated"],"resourceAttributes":{"verb":"%s","group":"%s","resource":"%s"}}}' "$1" "$2" "$3")
  admin_curl /apis/authorization.k8s.io/v1/subjectaccessreviews -X POST -H 'Content-Type: application/json' -d "$body" |
    grep -Eq '"allowed": ?true'
}

# Whether node identities may create tokenreviews and subjectaccessreviews.
node_delegated_auth() { node_allowed create authentication.k8s.io tokenreviews && node_allowed create authorization.k8s.io subjectaccessreviews; }

# A kubelet authenticates and authorizes proxied requests with TokenReview and
# SubjectAccessReview. The Node authorizer allows both to node identities; should a release stop
# doing so, grant exactly those two creates to system:nodes (never the broad system:node role).
ensure_node_rbac() {
  node_delegated_auth && return 0
  log "node identities cannot create tokenreviews/subjectaccessreviews: granting them to system:nodes"
  admin_curl /apis/rbac.authorization.k8s.io/v1/clusterroles -X POST -H 'Content-Type: application/json' -o /dev/null -d \
    '{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRole","metadata":{"name":"nodelet-test:node-delegated-auth"},"rules":[{"apiGroups":["authentication.k8s.io"],"resources":["tokenreviews"],"verbs":["create"]},{"apiGroups":["authorization.k8s.io"],"resources":["subjectaccessreviews"],"verbs":["create"]}]}'
  admin_curl /apis/rbac.authorization.k8s.io/v1/clusterrolebindings -X POST -H 'Content-Type: application/json' -o /dev/null -d \
    '{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRoleBinding","metadata":{"name":"nodelet-test:node-delegated-auth"},"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"nodelet-test:node-delegated-auth"},"subjects":[{"apiGroup":"rbac.authorization.k8s.io","kind":"Group","name":"system:nodes"}]}'
  wait_until "$TIMEOUT" 0.1 node_delegated_auth || fail_component kube-apiserver "the node RBAC grant did not take effect"
}

node_kubeconfig() {
  load_env "$1"
  local name=$2
  [[ $name =~ ^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$ ]] || die "invalid node name: $name"
  client_cert "node-$name" "/O=system:nodes/CN=system:node:$name"
  kubeconfig "$DIR/node-$name.kubeconfig" "system:node:$name" "$PKI/node-$name.crt" "$PKI/node-$name.key"
  echo "$DIR/node-$name.kubeconfig"
}

# Our process only: a recycled pid of another program is left alone.
ours() { [ -r "/proc/$1/cmdline" ] && tr '\0' ' ' <"/proc/$1/cmdline" | grep -qF "$DIR/"; }

# stop_components NAME...: SIGTERM, then SIGKILL after a few seconds.
stop_components() {
  local name pid pids=()
  for name in "$@"; do
    [ -f "$DIR/$name.pid" ] || continue
    pid=$(cat "$DIR/$name.pid")
    if ours "$pid"; then kill -TERM "$pid" 2>/dev/null && pids+=("$pid"); fi
    rm -f "$DIR/$name.pid"
  done
  local deadline=$((SECONDS + 5))
  for pid in "${pids[@]}"; do
    while kill -0 "$pid" 2>/dev/null && [ "$SECONDS" -lt "$deadline" ]; do sleep 0.05; done
    kill -KILL "$pid" 2>/dev/null || true
  done
  # Reap zombies' exit: wait until each pid is really gone.
  for pid in "${pids[@]}"; do
    while [ -d "/proc/$pid" ] && ! grep -q '^State:.*Z' "/proc/$pid/status" 2>/dev/null; do sleep 0.05; done
  done
}

# Whether this process runs in a network namespace other than the machine's (PID 1's).
in_own_netns() { [ "$(readlink /proc/self/ns/net)" != "$(readlink /proc/1/ns/net)" ]; }

kube_proxy_healthy() { curl -sSf --max-time 5 "http://127.0.0.1:$PROXY_HEALTHZ_PORT/healthz" >/dev/null; }

# One kube-proxy per network stack: the test cluster's nodes share one namespace, so one kube-proxy
# (as NODE, whose Node gives it the node IP) programs Services for all of them. iptables mode, the
# kubelet default (cmd/kube-proxy/app/server.go); its conntrack and OOM settings are left alone
# (0 = do not touch), since nf_conntrack_max is the machine's and root here lacks CAP_SYS_RESOURCE.
start_proxy() {
  load_env "$1"
  local node=$2
  in_own_netns || die "kube-proxy rewrites iptables: run it only inside a network namespace of the test's own, never in the machine's"
  [ "${APISERVER_ADDRESS:-127.0.0.1}" != 127.0.0.1 ] ||
    die "the apiserver is on 127.0.0.1, which pods cannot reach through a Service: start it with NODELET_APISERVER_ADDRESS"
  command -v iptables-restore >/dev/null 2>&1 || die "kube-proxy needs iptables-restore (Debian's iptables)"
  [ -x "$BIN_DIR/kube-proxy" ] || die "no $BIN_DIR/kube-proxy: run \`$0 build\` first"
  if [ -f "$DIR/kube-proxy.pid" ] && alive kube-proxy; then die "kube-proxy is already running"; fi
  client_cert kube-proxy /CN=system:kube-proxy
  kubeconfig "$DIR/kube-proxy.kubeconfig" system:kube-proxy "$PKI/kube-proxy.crt" "$PKI/kube-proxy.key"
  read -r PROXY_HEALTHZ_PORT PROXY_METRICS_PORT <<<"$(free_ports 2)"
  cat >"$DIR/kube-proxy.yaml" <<EOF
apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
clientConnection:
  kubeconfig: $DIR/kube-proxy.kubeconfig
hostnameOverride: $node
mode: iptables
clusterCIDR: 10.244.0.0/16
healthzBindAddress: 127.0.0.1:$PROXY_HEALTHZ_PORT
metricsBindAddress: 127.0.0.1:$PROXY_METRICS_PORT
oomScoreAdj: 0
conntrack:
  maxPerCore: 0
  min: 0
  tcpEstablishedTimeout: 0s
  tcpCloseWaitTimeout: 0s
iptables:
  minSyncPeriod: 100ms
EOF
  printf 'PROXY_HEALTHZ_PORT=%q\n' "$PROXY_HEALTHZ_PORT" >>"$DIR/env"
  spawn kube-proxy --config="$DIR/kube-proxy.yaml"
  # /healthz answers 200 once the first full sync has programmed the rules.
  wait_for kube-proxy "/healthz on :$PROXY_HEALTHZ_PORT" kube_proxy_healthy
  log "kube-proxy (iptables) running as $node"
}

stop_apiserver() {
  load_env "$1"
  stop_components kube-apiserver
}

start_apiserver() {
  load_env "$1"
  if [ -f "$DIR/kube-apiserver.pid" ] && alive kube-apiserver; then die "kube-apiserver is already running"; fi
  run_apiserver
}

stop() {
  local d=$1
  [ -d "$d" ] || return 0
  DIR=$(cd "$d" && pwd)
  # Delete only a directory this script made.
  [ -f "$DIR/env" ] || [ -d "$DIR/pki" ] || [ -z "$(ls -A "$DIR")" ] || die "$DIR does not look like a control-plane directory; not deleting it"
  stop_components kube-proxy kube-scheduler kube-controller-manager kube-apiserver etcd
  rm -rf "$DIR"
}

case ${1:-} in
  build) [ $# -eq 1 ] || usage; build ;;
  build-kubelet) [ $# -eq 1 ] || usage; build_kubelet ;;
  start) [ $# -eq 2 ] || usage; start "$2" ;;
  node-kubeconfig) [ $# -eq 3 ] || usage; node_kubeconfig "$2" "$3" ;;
  start-proxy) [ $# -eq 3 ] || usage; start_proxy "$2" "$3" ;;
  stop-apiserver) [ $# -eq 2 ] || usage; stop_apiserver "$2" ;;
  start-apiserver) [ $# -eq 2 ] || usage; start_apiserver "$2" ;;
  stop) [ $# -eq 2 ] || usage; stop "$2" ;;
  *) usage ;;
esac
