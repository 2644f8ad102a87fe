#!/usr/bin/env bash
# Kubernetes' own [NodeConformance] e2e specs (with --suite full: every [Conformance] spec) of
# k8s.io/kubernetes/test/e2e, the control plane's pinned version, against nodelet in cluster mode.
#
#   scripts/conformance.sh build-e2e     build e2e.test, the ginkgo runner, agnhost, nnp,
#                                        sample-apiserver and pause from the wrapper module
#                                        test/control-plane (cached by version); print their directory
#   scripts/conformance.sh images        build the e2e test images this machine can build honestly
#                                        into $DOCKER_HOST's engine (agnhost, busybox, pause,
#                                        nonewprivs, nginx, httpd, jessie-dnsutils, kitten, nautilus,
#                                        sample-apiserver, etcd)
#   scripts/conformance.sh run [--suite node|full] [OUT]
#                                        private Docker engine + images, control plane, nodelet nodes
#                                        in cluster mode, then the e2e suite; writes OUT/junit_01.xml,
#                                        OUT/summary.md (also printed) and every component's log to
#                                        OUT (default /tmp/nodelet-conformance/<date>); exits non-zero
#                                        when a spec outside the skip list fails. --suite node (the
#                                        default): the [NodeConformance] specs on 2 nodes; full:
#                                        every [Conformance] spec, on 3 nodes
#   scripts/conformance.sh summary [--suite node|full] OUT
#                                        write OUT/summary.md again from OUT/junit_01.xml
#
# Settings for `run` (environment; each overrides what --suite chose):
#   CONFORMANCE_SUITE      node or full, as --suite (default node)
#   CONFORMANCE_FOCUS      ginkgo focus regex (default '\[NodeConformance\]', full: '\[Conformance\]')
#   CONFORMANCE_SKIP_FILE  the documented skip list (default test/conformance/skip.yaml)
#   CONFORMANCE_NODES      how many nodelet nodes, one process each, one Docker engine (default 2,
#                          full: 3)
#   CONFORMANCE_PROCS      parallel ginkgo processes (default 4: specs mostly wait on pods)
#   CONFORMANCE_TIMEOUT    ginkgo's suite timeout (default 3h)
#   NODELET_CACHE          cache root (default ~/.cache/nodelet), shared with control-plane.sh
#
# No image comes from outside: the specs' images are built here under the exact names the suite
# asks for (k8s.io/kubernetes/test/utils/image/manifest.go); an image that cannot be built honestly
# stays absent and the specs that need it are on the skip list. `run` pushes them to a registry of
# its own (scripts/image-registry.sh, on 127.0.0.1:5100 in the namespace) and points the suite at it
# with KUBE_TEST_REPO_LIST (OUT/repo-list.yaml), so the nodes pull every image they run, with the
# pull policy each spec sets; a second registry on 127.0.0.1:5101 demands credentials no spec has,
# for the suite's authenticated registries.
#
# `run` runs the whole cluster inside a network namespace of its own with no way out (only `lo`,
# no route leading anywhere): the apiserver on 10.200.0.10 and node i on 10.200.0.i (addresses on
# that `lo`), pods on CNI bridges (Debian's bridge, host-local and portmap plugins; each node's
# range is the podCIDR the controller-manager allocates), so pod IPs exist only in there, plus
# kube-proxy (scripts/control-plane.sh start-proxy) and CoreDNS behind kube-dns 10.0.0.10
# (scripts/cluster-dns.sh), so Services and cluster DNS work for the pods. Everything is built
# before the namespace is entered: nothing inside it can reach the Go module proxy.
set -euo pipefail

LOG_NAME=conformance
# shellcheck source=scripts/lib.sh
. "$(dirname "$0")/lib.sh"
# NODELET_K8S picks the Kubernetes pin (lib.sh, k8s_module).
k8s_module

K8S_VERSION=$(module_version k8s.io/kubernetes)
CACHE=$NODELET_CACHE_DIR
BIN_DIR=$CACHE/conformance/$K8S_VERSION/bin
E2E=$BIN_DIR/e2e.test
GINKGO=$BIN_DIR/ginkgo
AGNHOST=$BIN_DIR/agnhost
PAUSE=$BIN_DIR/pause
NNP=$BIN_DIR/nnp
SAMPLE_APISERVER=$BIN_DIR/sample-apiserver
BINARIES=(e2e.test ginkgo agnhost pause nnp sample-apiserver)

# The images the suite names (manifest.go of $K8S_VERSION) that are built here. `images` checks
# them against `e2e.test --list-images`, so a version bump that renames one fails loudly.
AGNHOST_IMAGE=registry.k8s.io/e2e-test-images/agnhost:2.56
# AgnhostPrev (manifest.go): the image update specs roll from (StatefulSet, Deployment, pod image
# update); 1.34's suite does not name it.
AGNHOST_PREV_IMAGE=
BUSYBOX_IMAGE=registry.k8s.io/e2e-test-images/busybox:1.37.0-1
PAUSE_IMAGE=registry.k8s.io/pause:3.10.1
# The suite asks for nonewprivs 1.3; test/images/nonewprivs of this tag says 1.4, for a newer
# Alpine base: its program (nnp.go) prints the effective uid either way.
NONEWPRIVS_IMAGE=registry.k8s.io/e2e-test-images/nonewprivs:1.3
# test/images/nonroot: a base image whose USER is 1234 (the runAsNonRoot specs of
# test/e2e/common/node/security_context.go run `id -u` in it and expect 1234, or a refusal with
# runAsUser 0). Upstream's base is debian-base; here busybox, whose `id` is all the specs run.
NONROOT_IMAGE=registry.k8s.io/e2e-test-images/nonroot:1.4
# The suite's nginx is the official nginx image on Alpine (test/images/nginx mirrors it). Here it
# is Debian's nginx package (from the machine's own suites, 1.22) on busybox at Alpine's paths,
# configured as the official image: nginx -g 'daemon off;', port 80, /usr/share/nginx/html, the
# logs on stdout/stderr.
NGINX_IMAGE=registry.k8s.io/e2e-test-images/nginx:1.14-4
# NginxNew (manifest.go since 1.35, in place of httpd's new image): what update specs roll to.
NGINX_NEW_IMAGE=
# The suite's httpd images mirror the official httpd:2.4.38-alpine and httpd:2.4.39-alpine
# (test/images/httpd, test/images/httpd-new). Here both are Debian's apache2 (one version, from the
# machine's own suites) on busybox at Alpine's paths, laid out and configured as the official
# image: ServerRoot /usr/local/apache2, httpd-foreground, port 80, logs on stdout/stderr.
HTTPD_IMAGE=registry.k8s.io/e2e-test-images/httpd:2.4.38-4
HTTPD_NEW_IMAGE=registry.k8s.io/e2e-test-images/httpd:2.4.39-4
# test/images/jessie-dnsutils: Debian jessie with dnsutils (dig, nslookup, host) and getent; here
# Debian's bind9-dnsutils, bind9-host and the machine's glibc getent on busybox.
JESSIE_DNSUTILS_IMAGE=registry.k8s.io/e2e-test-images/jessie-dnsutils:1.7
# test/images/kitten and test/images/nautilus: agnhost plus a picture and data.json, served by
# agnhost's test-webserver (the update-demo specs).
KITTEN_IMAGE=registry.k8s.io/e2e-test-images/kitten:1.7
NAUTILUS_IMAGE=registry.k8s.io/e2e-test-images/nautilus:1.7
# The two containers of the aggregator spec's sample-apiserver pod (test/e2e/apimachinery/
# aggregator.go). The suite still names sample-apiserver 1.29.2; this tag's
# test/images/sample-apiserver builds 1.33.2 (`go install .` of k8s.io/sample-apiserver v0.33.2, at
# /sample-apiserver as ENTRYPOINT, on Alpine); here it is the staging module of this same tag
# (v0.34.4), built from this module.
SAMPLE_APISERVER_IMAGE=registry.k8s.io/e2e-test-images/sample-apiserver:1.29.2
# cluster/images/etcd: etcd (with etcdctl, etcdutl, migrate) in /usr/local/bin on distroless with
# bash-static as /bin/sh, WORKDIR /; the spec runs /usr/local/bin/etcd. Here it is the control
# plane's own etcd (scripts/control-plane.sh build, the pinned go.etcd.io/etcd/server/v3).
ETCD_IMAGE=registry.k8s.io/etcd:3.6.4-0
# The names above are v1.34.4's (NODELET_K8S=1.34). v1.37.2's manifest.go renames most of them;
# each is built by the same recipe as its 1.34 counterpart.
case $K8S_VERSION in
  v1.34.*) ;;
  v1.37.*)
    AGNHOST_IMAGE=registry.k8s.io/e2e-test-images/agnhost:2.66.1
    AGNHOST_PREV_IMAGE=registry.k8s.io/e2e-test-images/agnhost:2.55
    BUSYBOX_IMAGE=registry.k8s.io/e2e-test-images/busybox:1.37.0-2
    PAUSE_IMAGE=registry.k8s.io/pause:3.10.2
    # The suite now asks for the 1.4 that test/images/nonewprivs builds.
    NONEWPRIVS_IMAGE=registry.k8s.io/e2e-test-images/nonewprivs:1.4
    # Its runAsNonRoot specs are [NodeConformance] since 1.35.
    NONROOT_IMAGE=registry.k8s.io/e2e-test-images/nonroot:1.5
    NGINX_IMAGE=registry.k8s.io/e2e-test-images/nginx:1.27.0-2
    NGINX_NEW_IMAGE=registry.k8s.io/e2e-test-images/nginx:1.28.0-2
    # The httpd images are gone since 1.35 (their specs use nginx).
    HTTPD_IMAGE='' HTTPD_NEW_IMAGE=''
    # test/images/glibc-dns-testing replaces jessie-dnsutils: Debian (bookworm-slim) with dnsutils
    # and glibc's getent, which the jessie-dnsutils recipe here already is.
    JESSIE_DNSUTILS_IMAGE=registry.k8s.io/e2e-test-images/glibc-dns-testing:2.1.1
    KITTEN_IMAGE=registry.k8s.io/e2e-test-images/kitten:1.8
    NAUTILUS_IMAGE=registry.k8s.io/e2e-test-images/nautilus:1.8
    ETCD_IMAGE=registry.k8s.io/etcd:3.7.0-0
    ;;
  *) die "no image names for $K8S_VERSION: add them from its test/utils/image/manifest.go" ;;
esac
SUITE_IMAGES=()
for img in "$AGNHOST_IMAGE" "$AGNHOST_PREV_IMAGE" "$BUSYBOX_IMAGE" "$PAUSE_IMAGE" "$NONEWPRIVS_IMAGE" "$NONROOT_IMAGE" "$NGINX_IMAGE" "$NGINX_NEW_IMAGE" \
  "$HTTPD_IMAGE" "$HTTPD_NEW_IMAGE" "$JESSIE_DNSUTILS_IMAGE" "$KITTEN_IMAGE" "$NAUTILUS_IMAGE" \
  "$SAMPLE_APISERVER_IMAGE" "$ETCD_IMAGE"; do
  [ -z "$img" ] || SUITE_IMAGES+=("$img")
done

# ---------------------------------------------------------------------------------------------
# build-e2e

have_binaries() {
  local b
  for b in "${BINARIES[@]}"; do [ -x "$BIN_DIR/$b" ] || return 1; done
}

# The module's source directory of k8s.io/kubernetes (downloads it when missing).
k8s_source() {
  (cd "$MODULE" && go list -m -f '{{.Dir}}' k8s.io/kubernetes)
}

build_e2e() {
  if have_binaries; then echo "$BIN_DIR"; return 0; fi
  need_go "e2e.test ($K8S_VERSION)" ": install Go >= 1.26 (1.24 for NODELET_K8S=1.34)"
  build_lock "$BIN_DIR"
  if have_binaries; then echo "$BIN_DIR"; return 0; fi
  # The same version stamping as scripts/control-plane.sh: the suite logs and compares it.
  local ld; ld=$(k8s_ldflags "$K8S_VERSION")
  export CGO_ENABLED=0 GOTOOLCHAIN=local GOFLAGS="${GOFLAGS:+$GOFLAGS }-mod=mod"
  log "building e2e.test, ginkgo, agnhost, nnp, sample-apiserver ($K8S_VERSION) and pause with $(go version | awk '{print $3}') into $BIN_DIR"
  local b tmp start
  for b in "${BINARIES[@]}"; do
    [ -x "$BIN_DIR/$b" ] && continue
    # A temp name, renamed when complete: a killed build never leaves a half binary behind.
    tmp="$BIN_DIR/.$b.tmp.$$"
    start=$SECONDS
    case $b in
      e2e.test)
        (cd "$MODULE" && go test -c -trimpath -ldflags "$ld" -o "$tmp" k8s.io/kubernetes/test/e2e) ;;
      ginkgo)
        (cd "$MODULE" && go build -trimpath -ldflags "-s -w" -o "$tmp" github.com/onsi/ginkgo/v2/ginkgo) ;;
      agnhost)
        (cd "$MODULE" && go build -trimpath -ldflags "$ld" -o "$tmp" k8s.io/kubernetes/test/images/agnhost) ;;
      nnp)
        (cd "$MODULE" && go build -trimpath -ldflags "-s -w" -o "$tmp" k8s.io/kubernetes/test/images/nonewprivs) ;;
      sample-apiserver)
        # The module's root is its main package (test/images/sample-apiserver/Makefile: `go install .`).
        (cd "$MODULE" && go build -trimpath -ldflags "$ld" -o "$tmp" k8s.io/sample-apiserver) ;;
      pause)
        # The pause image's own program (build/pause/linux/pause.c of the same tag), static.
        command -v gcc >/dev/null 2>&1 || die "gcc (and libc6-dev) are needed to build the pause image"
        local src; src=$(k8s_source)/build/pause/linux/pause.c
        gcc -Os -Wall -Werror -static -DVERSION="v${PAUSE_IMAGE##*:}" -o "$tmp" "$src" && strip "$tmp" ;;
    esac || { rm -f "$tmp"; die "building $b failed"; }
    mv -f "$tmp" "$BIN_DIR/$b"
    log "built $b in $((SECONDS - start)) s"
  done
  echo "$BIN_DIR"
}

# ---------------------------------------------------------------------------------------------
# images

image_present() { docker image inspect "$1" >/dev/null 2>&1; }

# The Debian packages whose files go into images, fetched before `run` enters its sealed
# namespace (nothing can be downloaded in there): netcat-openbsd (agnhost), nginx, apache2-bin
# (httpd) with the APR libraries it loads and media-types (mime.types), bind9-dnsutils and
# bind9-host (dig, nslookup, host: agnhost and jessie-dnsutils) with bind9-libs and the less
# common libraries bind9-libs loads. Their other libraries (libc, OpenSSL, libxml2, Kerberos, …)
# are the machine's own: copy_deb_binary takes each library from these packages first, then from
# the machine, and fails (the image stays absent, with a WARNING) on one found in neither.
IMAGE_DEBS=(netcat-openbsd nginx nginx-common
  apache2-bin libapr1 libaprutil1 media-types
  bind9-dnsutils bind9-host bind9-libs libjemalloc2 libfstrm0 liblmdb0 libmaxminddb0 libuv1
  libjson-c5 libprotobuf-c1)
# The packages of bind9-dnsutils' dig and nslookup and bind9-host's host, and their libraries'.
DNSUTILS_DEBS=(bind9-dnsutils bind9-host bind9-libs libjemalloc2 libfstrm0 liblmdb0 libmaxminddb0
  libuv1 libjson-c5 libprotobuf-c1)

# debian_package PACKAGE: Debian's PACKAGE unpacked (fetched once with `apt-get download` from the
# machine's own suites, as apt installs do, and kept under the cache); prints the directory holding
# the .deb and its tree in x/, or fails when the package cannot be had.
debian_package() {
  local dir=$CACHE/conformance/debs/$1
  if [ ! -d "$dir/x" ]; then
    rm -rf "$dir" && mkdir -p "$dir"
    (cd "$dir" && apt-get download "$1" >/dev/null 2>&1) || { rm -rf "$dir"; return 1; }
    dpkg-deb -x "$dir"/*.deb "$dir/x.tmp" && mv "$dir/x.tmp" "$dir/x"
  fi
  echo "$dir"
}

# copy_with_libs BINARY ROOTFS DEST: BINARY at DEST in ROOTFS with the shared libraries it loads.
copy_with_libs() {
  local bin=$1 r=$2 dest=$3 lib
  mkdir -p "$r$(dirname "$dest")"
  cp "$bin" "$r$dest"
  for lib in $(ldd "$bin" | awk '/=>/ { print $3 } /^\t\// { print $1 }'); do
    mkdir -p "$r$(dirname "$lib")"
    cp -L "$lib" "$r$lib"
  done
}

# image_files NAME DIR: the files of image NAME that no build step makes (users and groups,
# configuration, pages), test/conformance/images/NAME/rootfs, copied over the root filesystem
# being built in DIR.
image_files() { cp -R "$ROOT/test/conformance/images/$1/rootfs/." "$2/"; }

# busybox_rootfs DIR LAYOUT: busybox-static with one link per applet; LAYOUT "flat" puts every
# applet in /bin (the busybox image), "full" at busybox's own install paths (an Alpine layout).
busybox_rootfs() {
  local dir=$1 layout=$2 bb applet
  bb=$(command -v busybox) || die "busybox (Debian's busybox-static) is needed"
  mkdir -p "$dir"/{bin,sbin,usr/bin,usr/sbin,etc,tmp,root,home,var/tmp}
  cp "$bb" "$dir/bin/busybox"
  if [ "$layout" = flat ]; then
    for applet in $("$bb" --list); do
      [ "$applet" = busybox ] || ln -sf busybox "$dir/bin/$applet"
    done
  else
    for applet in $("$bb" --list-full); do
      case $applet in bin/busybox | linuxrc) continue ;; esac
      ln -sf /bin/busybox "$dir/$applet"
    done
    ln -sf /bin/busybox "$dir/bin/sh"
  fi
  chmod 1777 "$dir/tmp" "$dir/var/tmp"
  chmod 700 "$dir/root"
}

# import_busybox_image DIR IMAGE CHANGE…: the busybox image's files (busybox alone, applets in /bin)
# built in DIR and imported as IMAGE with the `docker import` options CHANGE….
import_busybox_image() {
  local dir=$1 image=$2
  shift 2
  busybox_rootfs "$dir" flat
  image_files busybox "$dir"
  tar -C "$dir" -c . | docker import "$@" - "$image" >/dev/null
}

# retagged_image SRC DST: SRC under the tag DST, with a label of its own so the two are different
# images. For the images update specs roll between (AgnhostPrev, NginxNew): they check that pods
# move from one image to the other, not what the software's version says; the previous or next
# release of that software is not buildable from this module.
retagged_image() {
  local src=$1 dst=$2
  image_present "$src" || { log "WARNING: no $src: $dst not built"; return 0; }
  log "building $dst: $src under that tag, an image of its own"
  printf 'FROM %s\nLABEL io.nodelet.conformance.image=%s\n' "$src" "$dst" | docker build -q -t "$dst" - >/dev/null
}

# fake_registry_content DIR IMAGES_TXT: what test/images/agnhost/fakeregistryserver/prepare_registry.sh
# puts at /var/registry of the agnhost image, for the images IMAGES_TXT names ("name tag internal_tag"
# per line): per image a manifest list (linux only) behind a tag file named internal_tag, its
# manifest, config and layers, stored as the fake registry's handlers read them
# (fakeregistryserver/registryserver.go: <name>/manifests/<tag> holds the list's digest, every
# object at <kind>/sha256/<2 hex>/<hex>/data). Upstream copies them from registry.k8s.io with crane;
# here each image is the one this script built under registry.k8s.io/<name>:<tag> (`docker save`,
# its layers gzipped as a registry stores them). The private-registry spec of 1.35+ pulls
# localhost:5000/pause:testing from agnhost's fake-registry-server (test/e2e/common/node/runtime.go).
fake_registry_content() {
  local dir=$1 list=$2 name tag internal
  [ -f "$list" ] || return 0
  while read -r name tag internal; do
    case $name in '' | \#*) continue ;; esac
    if ! image_present "registry.k8s.io/$name:$tag"; then
      log "WARNING: registry.k8s.io/$name:$tag not built: agnhost's fake registry will not serve $name:$internal"
      continue
    fi
    local saved; saved=$(mktemp -d)
    docker save "registry.k8s.io/$name:$tag" | tar -C "$saved" -x
    node - "$saved" "$dir/$name" "$internal" <<'JS' || die "fake registry content for $name failed"
const { createHash } = require('node:crypto');
const { readFileSync, writeFileSync, mkdirSync } = require('node:fs');
const { gzipSync } = require('node:zlib');
const { join } = require('node:path');
const [saved, imageDir, tag] = process.argv.slice(2);
const put = (kind, data) => {
  const hex = createHash('sha256').update(data).digest('hex');
  const d = join(imageDir, kind, 'sha256', hex.slice(0, 2), hex);
  mkdirSync(d, { recursive: true });
  writeFileSync(join(d, 'data'), data);
  return { digest: `sha256:${hex}`, size: data.length };
};
const [entry] = JSON.parse(readFileSync(join(saved, 'manifest.json'), 'utf8'));
const configBytes = readFileSync(join(saved, entry.Config));
const config = JSON.parse(configBytes);
const manifest = Buffer.from(JSON.stringify({
  schemaVersion: 2,
  mediaType: 'application/vnd.docker.distribution.manifest.v2+json',
  config: { mediaType: 'application/vnd.docker.container.image.v1+json', ...put('blobs', configBytes) },
  layers: entry.Layers.map((l) => ({ mediaType: 'application/vnd.docker.image.rootfs.diff.tar.gzip', ...put('blobs', gzipSync(readFileSync(join(saved, l)))) })),
}));
const list = Buffer.from(JSON.stringify({
  schemaVersion: 2,
  mediaType: 'application/vnd.docker.distribution.manifest.list.v2+json',
  manifests: [{ mediaType: 'application/vnd.docker.distribution.manifest.v2+json', ...put('manifests', manifest), platform: { architecture: config.architecture, os: config.os } }],
}));
writeFileSync(join(imageDir, 'manifests', tag), put('manifests', list).digest + '\n');
JS
    rm -rf "$saved"
  done <"$list"
}

check_image_names() {
  local listed
  listed=$("$E2E" --list-images 2>/dev/null) || die "e2e.test --list-images failed"
  local img
  for img in "${SUITE_IMAGES[@]}"; do
    grep -qxF "$img" <<<"$listed" || die "$img is not an image of e2e.test $K8S_VERSION: update scripts/conformance.sh from test/utils/image/manifest.go"
  done
}

build_images() {
  [ -n "${DOCKER_HOST:-}" ] || die "DOCKER_HOST is not set: images go into a private engine (scripts/docker-engine.sh private DIR)"
  have_binaries || die "binaries missing in $BIN_DIR: run \`$0 build-e2e\` first"
  check_image_names
  local ctx; ctx=$(mktemp -d)
  local path_env='ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin'

  if ! image_present "$BUSYBOX_IMAGE"; then
    # test/images/busybox mirrors the upstream busybox image: busybox alone, applets in /bin.
    log "building $BUSYBOX_IMAGE from $(busybox | head -n 1 | awk '{print $1, $2}')"
    import_busybox_image "$ctx/busybox" "$BUSYBOX_IMAGE" --change "$path_env" --change 'CMD ["sh"]'
  fi

  if ! image_present "$PAUSE_IMAGE"; then
    # build/pause/Dockerfile: /pause alone, run as 65535:65535.
    local r=$ctx/pause
    mkdir -p "$r"
    cp "$PAUSE" "$r/pause"
    log "building $PAUSE_IMAGE from build/pause/linux/pause.c"
    tar -C "$r" -c . | docker import --change 'USER 65535:65535' --change 'ENTRYPOINT ["/pause"]' - "$PAUSE_IMAGE" >/dev/null
  fi

  if ! image_present "$AGNHOST_IMAGE"; then
    # test/images/agnhost/Dockerfile: /agnhost (+ agnhost-2), /uploads, porter's localhost.crt/key,
    # user 1000 in group 50000, on Alpine with bash, curl, netcat-openbsd, bind-tools and friends.
    # Here the base is busybox at Alpine's paths plus the machine's bash and curl and Debian's
    # netcat-openbsd as nc, with their libraries (the node-pod specs run `curl -g -q -s …` and
    # `echo … | nc -w 1 -u …` in it: test/e2e/framework/network/utils.go), plus dig, nslookup and
    # host (Debian's bind9-dnsutils and bind9-host, as Alpine's bind-tools) and glibc's getent:
    # the DNS specs' agnhost querier runs `dig +notcp|+tcp +noall +answer +search …` and
    # `getent hosts …` (test/e2e/network/dns_common.go createProbeCommand; dns.go runs it in
    # imageutils.Agnhost next to the jessie-dnsutils querier) and the ExternalName checks run
    # `nslookup` in an agnhost exec pod (test/e2e/framework/service/jig.go). iperf and coredns
    # are absent.
    local r=$ctx/agnhost src
    src=$(k8s_source)/test/images/agnhost
    busybox_rootfs "$r" full
    cp "$AGNHOST" "$r/agnhost"
    ln -s agnhost "$r/agnhost-2"
    mkdir -p "$r/uploads"
    cp "$src/porter/localhost.crt" "$src/porter/localhost.key" "$r/"
    copy_with_libs "$(readlink -f "$(command -v bash)")" "$r" /bin/bash
    copy_with_libs "$(readlink -f "$(command -v curl)")" "$r" /usr/bin/curl
    local nc
    if nc=$(debian_package netcat-openbsd); then
      # busybox's nc is a link to /bin/busybox: removed, never written through.
      rm -f "$r/usr/bin/nc"
      copy_with_libs "$nc/x/bin/nc.openbsd" "$r" /usr/bin/nc
      # Debian's busybox-static runs its own applets before PATH (FEATURE_SH_STANDALONE), so `nc`
      # in its sh would still be busybox's: sh is the image's bash here (Alpine's busybox sh
      # follows PATH).
      ln -sf /bin/bash "$r/bin/sh"
    else
      log "WARNING: apt-get download netcat-openbsd failed: agnhost keeps busybox's nc (no UDP)"
    fi
    local t
    for t in /usr/bin/dig /usr/bin/nslookup /usr/bin/host; do
      copy_deb_binary "$t" "$r" "$t" "${DNSUTILS_DEBS[@]}" ||
        log "WARNING: $t not in $AGNHOST_IMAGE (the DNS specs' agnhost querier runs dig and getent, the ExternalName checks nslookup)"
    done
    copy_with_libs "$(command -v getent)" "$r" /usr/bin/getent
    # glibc without an nsswitch.conf asks DNS first and stops at its answer: /etc/hosts first, as
    # musl (Alpine's getent) does: its etc/nsswitch.conf says so. Alpine's users, and agnhost's.
    image_files agnhost "$r"
    fake_registry_content "$r/var/registry" "$src/fakeregistryserver/images.txt"
    mkdir -p "$r/home/user-defined-in-image"
    chown 1000:1000 "$r/home/user-defined-in-image"
    log "building $AGNHOST_IMAGE from test/images/agnhost ($K8S_VERSION)"
    tar -C "$r" -c . | docker import --change "$path_env" --change 'ENTRYPOINT ["/agnhost"]' \
      --change 'CMD ["pause"]' --change 'EXPOSE 80 8080 8081 9376 5000' - "$AGNHOST_IMAGE" >/dev/null
  fi

  if [ -n "$AGNHOST_PREV_IMAGE" ] && ! image_present "$AGNHOST_PREV_IMAGE"; then
    retagged_image "$AGNHOST_IMAGE" "$AGNHOST_PREV_IMAGE"
  fi

  if ! image_present "$NONEWPRIVS_IMAGE"; then
    # test/images/nonewprivs/Dockerfile: Alpine with nnp at /usr/local/bin, set-uid root, as CMD.
    local r=$ctx/nonewprivs
    busybox_rootfs "$r" full
    image_files nonewprivs "$r"
    mkdir -p "$r/usr/local/bin"
    cp "$NNP" "$r/usr/local/bin/nnp"
    chown 0:0 "$r/usr/local/bin/nnp"
    chmod 4755 "$r/usr/local/bin/nnp"
    log "building $NONEWPRIVS_IMAGE from test/images/nonewprivs ($K8S_VERSION)"
    tar -C "$r" -c . | docker import --change "$path_env" --change 'CMD ["nnp"]' - "$NONEWPRIVS_IMAGE" >/dev/null
  fi
  if ! image_present "$NONROOT_IMAGE"; then
    # test/images/nonroot/Dockerfile: FROM the base, USER 1234.
    log "building $NONROOT_IMAGE from test/images/nonroot ($K8S_VERSION)"
    import_busybox_image "$ctx/nonroot" "$NONROOT_IMAGE" --change "$path_env" --change 'USER 1234'
  fi
  if ! image_present "$NGINX_IMAGE"; then
    build_nginx_image "$ctx/nginx" "$path_env"
  fi
  if [ -n "$NGINX_NEW_IMAGE" ] && ! image_present "$NGINX_NEW_IMAGE"; then
    retagged_image "$NGINX_IMAGE" "$NGINX_NEW_IMAGE"
  fi
  if [ -n "$HTTPD_IMAGE" ] && { ! image_present "$HTTPD_IMAGE" || ! image_present "$HTTPD_NEW_IMAGE"; }; then
    build_httpd_images "$ctx/httpd" "$path_env"
  fi
  if ! image_present "$JESSIE_DNSUTILS_IMAGE"; then
    build_jessie_dnsutils_image "$ctx/jessie-dnsutils" "$path_env"
  fi
  image_present "$KITTEN_IMAGE" || build_update_demo_image kitten "$KITTEN_IMAGE"
  image_present "$NAUTILUS_IMAGE" || build_update_demo_image nautilus "$NAUTILUS_IMAGE"
  if ! image_present "$SAMPLE_APISERVER_IMAGE" || ! image_present "$ETCD_IMAGE"; then
    build_aggregator_images "$ctx/aggregator" "$path_env"
  fi
  rm -rf "$ctx"
}

# build_aggregator_images DIR PATH_ENV: the aggregator spec's sample-apiserver and etcd images
# (whichever is absent). sample-apiserver: test/images/sample-apiserver/Dockerfile, the program at
# /sample-apiserver as ENTRYPOINT (the spec passes only args: --etcd-servers, --tls-cert-file, …),
# user root, on busybox at Alpine's paths. etcd: cluster/images/etcd/Dockerfile as far as the spec
# uses it, the control plane's etcd at /usr/local/bin/etcd (etcdctl and etcdutl beside it when
# that bin directory has them; scripts/control-plane.sh builds neither, nor migrate), WORKDIR / (the
# spec gives no --data-dir: etcd writes /default.etcd), user root, ports 2379 2380 4001 7001, on
# busybox (upstream: bash-static as /bin/sh on distroless/static, with its passwd and group).
build_aggregator_images() {
  local r=$1 path_env=$2
  if ! image_present "$SAMPLE_APISERVER_IMAGE"; then
    busybox_rootfs "$r/sample-apiserver" full
    image_files sample-apiserver "$r/sample-apiserver"
    cp "$SAMPLE_APISERVER" "$r/sample-apiserver/sample-apiserver"
    log "building $SAMPLE_APISERVER_IMAGE from k8s.io/sample-apiserver $(module_version k8s.io/sample-apiserver)"
    tar -C "$r/sample-apiserver" -c . | docker import --change "$path_env" \
      --change 'ENTRYPOINT ["/sample-apiserver"]' - "$SAMPLE_APISERVER_IMAGE" >/dev/null
  fi
  if ! image_present "$ETCD_IMAGE"; then
    local cp_bin b
    # Cached by scripts/control-plane.sh (`run` has built it already; `images` alone may build it).
    if ! cp_bin=$("$ROOT/scripts/control-plane.sh" build) || [ ! -x "$cp_bin/etcd" ]; then
      log "WARNING: scripts/control-plane.sh build gave no etcd: $ETCD_IMAGE not built"
      return 0
    fi
    local e=$r/etcd
    busybox_rootfs "$e" full
    # distroless/static's users and groups.
    printf 'root:x:0:0:root:/root:/sbin/nologin\nnobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n' >"$e/etc/passwd"
    printf 'root:x:0:\nnobody:x:65534:\ntty:x:5:\nstaff:x:50:\nnonroot:x:65532:\n' >"$e/etc/group"
    mkdir -p "$e/usr/local/bin" "$e/home/nonroot"
    chown 65532:65532 "$e/home/nonroot"
    for b in etcd etcdctl etcdutl; do
      if [ -x "$cp_bin/$b" ]; then cp "$cp_bin/$b" "$e/usr/local/bin/$b"; fi
    done
    log "building $ETCD_IMAGE from the control plane's etcd $("$cp_bin/etcd" --version | awk '/^etcd Version/ { print $3 }')"
    tar -C "$e" -c . | docker import --change "$path_env" --change 'WORKDIR /' \
      --change 'EXPOSE 2379 2380 4001 7001' - "$ETCD_IMAGE" >/dev/null
  fi
}

# build_nginx_image DIR PATH_ENV: Debian's nginx binary and its libraries on busybox at Alpine's
# paths, configured as the official image (user nginx 101, conf.d/default.conf on port 80).
build_nginx_image() {
  local r=$1 path_env=$2 nginx common
  # Without the packages the image stays absent (only the one spec that switches to nginx needs
  # it) and that spec fails, visibly, in a full run; the CI subset does not use it.
  if ! nginx=$(debian_package nginx) || ! common=$(debian_package nginx-common); then
    log "WARNING: apt-get download nginx nginx-common failed: $NGINX_IMAGE not built"
    return 0
  fi
  busybox_rootfs "$r" full
  copy_with_libs "$nginx/x/usr/sbin/nginx" "$r" /usr/sbin/nginx
  mkdir -p "$r/etc/nginx/conf.d" "$r/usr/share/nginx/html" "$r/var/cache/nginx" "$r/var/log/nginx" "$r/run"
  cp "$common/x/etc/nginx/mime.types" "$r/etc/nginx/"
  image_files nginx "$r"
  ln -sf /dev/stdout "$r/var/log/nginx/access.log"
  ln -sf /dev/stderr "$r/var/log/nginx/error.log"
  log "building $NGINX_IMAGE from Debian's nginx $(dpkg-deb -f "$nginx"/nginx_*.deb Version)"
  # The official image's STOPSIGNAL SIGQUIT is not a change `docker import` takes: SIGTERM stops
  # nginx too (fast shutdown instead of graceful).
  tar -C "$r" -c . | docker import --change "$path_env" --change 'EXPOSE 80' \
    --change 'CMD ["nginx", "-g", "daemon off;"]' - "$NGINX_IMAGE" >/dev/null
}

# copy_deb_binary FILE ROOTFS DEST PACKAGE…: FILE of the PACKAGEs (a path in their trees, e.g.
# /usr/bin/dig, from the first that ships it) at DEST in ROOTFS with the shared libraries it
# loads, each from the PACKAGEs' trees when one ships it (ldd with their library directories on
# LD_LIBRARY_PATH), else the machine's own, at the same path in ROOTFS; fails, naming it, when a
# package cannot be had or a library is found in neither.
copy_deb_binary() {
  local file=$1 r=$2 dest=$3 pkg dir bin="" libpath="" d out lib to
  shift 3
  for pkg in "$@"; do
    dir=$(debian_package "$pkg") || { log "apt-get download $pkg failed"; return 1; }
    [ -n "$bin" ] || [ ! -f "$dir/x$file" ] || bin=$dir/x$file
    for d in "$dir"/x/lib/*-linux-gnu "$dir"/x/usr/lib/*-linux-gnu; do
      [ -d "$d" ] && libpath+=${libpath:+:}$d
    done
  done
  [ -n "$bin" ] || { log "no $file in $*"; return 1; }
  out=$(LD_LIBRARY_PATH=$libpath ldd "$bin") || { log "ldd $bin failed"; return 1; }
  if grep -q 'not found' <<<"$out"; then
    log "$file needs $(awk '/not found/ { print $1 }' <<<"$out" | xargs), in neither $* nor this machine"
    return 1
  fi
  mkdir -p "$r$(dirname "$dest")"
  # A busybox applet's link at DEST is replaced, never written through.
  rm -f "$r$dest"
  cp "$bin" "$r$dest"
  for lib in $(awk '/=>/ { print $3 } /^\t\// { print $1 }' <<<"$out"); do
    to=${lib#"$CACHE/conformance/debs/"*/x}
    mkdir -p "$r$(dirname "$to")"
    cp -L "$lib" "$r$to"
  done
}

# build_httpd_images DIR PATH_ENV: test/images/httpd/Dockerfile and test/images/httpd-new/Dockerfile
# only mirror the official httpd:2.4.38-alpine and httpd:2.4.39-alpine. Here both tags are one
# build of Debian's apache2 (apache2-bin: /usr/sbin/apache2 as bin/httpd and the modules the
# official httpd.conf loads) on busybox at Alpine's paths, laid out as the official image:
# ServerRoot /usr/local/apache2 (bin, conf, htdocs with "It works!", logs, modules), WORKDIR there,
# httpd-foreground as CMD (httpd -DFOREGROUND: root parent, workers as daemon), port 80, the error
# log on stderr and the access log on stdout. The StatefulSet specs move htdocs/index.html to /tmp
# and back to fail and restore the /index.html readiness probe (test/e2e/apps/statefulset.go).
build_httpd_images() {
  local r=$1 path_env=$2 m
  local mods=(mpm_event authn_file authn_core authz_host authz_groupfile authz_user authz_core
    access_compat auth_basic reqtimeout filter mime env headers setenvif status autoindex dir alias)
  local apache=(apache2-bin libapr1 libaprutil1) types
  local h=/usr/local/apache2
  busybox_rootfs "$r" full
  if ! copy_deb_binary /usr/sbin/apache2 "$r" "$h/bin/httpd" "${apache[@]}" ||
    ! types=$(debian_package media-types); then
    log "WARNING: Debian's apache2-bin (or media-types) cannot be had: $HTTPD_IMAGE and $HTTPD_NEW_IMAGE not built"
    return 0
  fi
  for m in "${mods[@]}"; do
    copy_deb_binary "/usr/lib/apache2/modules/mod_$m.so" "$r" "$h/modules/mod_$m.so" "${apache[@]}" || {
      log "WARNING: mod_$m of apache2-bin cannot be copied: $HTTPD_IMAGE and $HTTPD_NEW_IMAGE not built"
      return 0
    }
  done
  # Debian's busybox-static runs its own applets before PATH (FEATURE_SH_STANDALONE), so
  # httpd-foreground's `exec httpd` under its sh would start busybox's httpd: sh is the machine's
  # dash here (Alpine's busybox sh follows PATH), and busybox's httpd link is gone.
  copy_with_libs "$(readlink -f "$(command -v dash)")" "$r" /bin/dash
  ln -sf dash "$r/bin/sh"
  rm -f "$r/usr/sbin/httpd"
  # glibc loads libgcc_s.so.1 when a thread exits (pthread_exit: mpm_event's worker threads), which
  # ldd does not list: without it every child aborts.
  local libdir; libdir=$(dirname "$(cd "$r" && find . -name libc.so.6 | head -n 1)"); libdir=${libdir#.}
  cp -L "$libdir/libgcc_s.so.1" "$r$libdir/"
  mkdir -p "$r$h"/{conf,htdocs,logs,cgi-bin} "$r/usr/local/bin" "$r/etc/apache2"
  cp "$types/x/etc/mime.types" "$r$h/conf/mime.types"
  # Debian's apache2 is compiled with HTTPD_ROOT /etc/apache2 and apache2.conf as its default
  # config (apache2 -V): that name leads to the official image's conf/httpd.conf, so a plain
  # `httpd` (httpd-foreground, `httpd -t`, `httpd -k graceful`) reads it.
  ln -s "$h/conf/httpd.conf" "$r/etc/apache2/apache2.conf"
  {
    echo "# The official image's conf/httpd.conf (httpd 2.4's default) without its comments and"
    echo "# the sections of modules it does not load. log_config, version and unixd are compiled"
    echo "# into Debian's apache2 (apache2 -l); its compiled-in pid file is /run/apache2.pid:"
    echo "# upstream's logs/httpd.pid (which httpd-foreground removes) is set here."
    echo "ServerRoot \"$h\""
    echo 'PidFile "logs/httpd.pid"'
    echo 'DefaultRuntimeDir "logs"'
    echo 'Listen 80'
    for m in "${mods[@]}"; do echo "LoadModule ${m}_module modules/mod_$m.so"; done
    cat <<EOF
<IfModule unixd_module>
User daemon
Group daemon
</IfModule>
ServerAdmin you@example.com
<Directory />
    AllowOverride none
    Require all denied
</Directory>
DocumentRoot "$h/htdocs"
<Directory "$h/htdocs">
    Options Indexes FollowSymLinks
    AllowOverride None
    Require all granted
</Directory>
<IfModule dir_module>
    DirectoryIndex index.html
</IfModule>
<Files ".ht*">
    Require all denied
</Files>
ErrorLog /proc/self/fd/2
LogLevel warn
<IfModule log_config_module>
    LogFormat "%h %l %u %t \\"%r\\" %>s %b \\"%{Referer}i\\" \\"%{User-Agent}i\\"" combined
    LogFormat "%h %l %u %t \\"%r\\" %>s %b" common
    <IfModule logio_module>
      LogFormat "%h %l %u %t \\"%r\\" %>s %b \\"%{Referer}i\\" \\"%{User-Agent}i\\" %I %O" combinedio
    </IfModule>
    CustomLog /proc/self/fd/1 common
</IfModule>
<IfModule alias_module>
    ScriptAlias /cgi-bin/ "$h/cgi-bin/"
</IfModule>
<Directory "$h/cgi-bin">
    AllowOverride None
    Options None
    Require all granted
</Directory>
<IfModule headers_module>
    RequestHeader unset Proxy early
</IfModule>
<IfModule mime_module>
    TypesConfig conf/mime.types
    AddType application/x-compress .Z
    AddType application/x-gzip .gz .tgz
</IfModule>
EOF
  } >"$r$h/conf/httpd.conf"
  # Its files: htdocs/index.html ("It works!"), the official image's /usr/local/bin/httpd-foreground,
  # Alpine's users and groups (the official image adds www-data, 82, and gives it ServerRoot).
  image_files httpd "$r"
  chown 82:82 "$r$h"
  local version; version=$(dpkg-deb -f "$(debian_package apache2-bin)"/apache2-bin_*.deb Version)
  # Newer official httpd images set STOPSIGNAL SIGWINCH (graceful stop), which is not a change
  # `docker import` takes: SIGTERM stops httpd too (at once). Each tag is imported on its own with a label naming
  # the image it stands for, so the two are distinct images (different IDs) as upstream's are; no
  # spec compares their IDs (the rollout specs compare the pod templates' image names).
  local image tag
  for image in "$HTTPD_IMAGE" "$HTTPD_NEW_IMAGE"; do
    image_present "$image" && continue
    tag=${image##*:}
    log "building $image from Debian's apache2 $version"
    tar -C "$r" -c . | docker import --change "ENV HTTPD_PREFIX=$h" \
      --change "ENV PATH=$h/bin:${path_env#ENV PATH=}" --change "WORKDIR $h" --change 'EXPOSE 80' \
      --change "LABEL nodelet.mirrors=httpd:${tag%-*}-alpine" --change 'CMD ["httpd-foreground"]' - "$image" >/dev/null
  done
}

# build_jessie_dnsutils_image DIR PATH_ENV: test/images/jessie-dnsutils/Dockerfile is Debian
# jessie with dnsutils (dig, nslookup; host comes with it) and coredns 1.5.0 at /coredns. Here:
# Debian's bind9-dnsutils and bind9-host (bookworm's dnsutils) and the machine's glibc getent
# (libc-bin) with Debian's nsswitch.conf (hosts: files dns), bash and dash as /bin/sh, on busybox
# for the rest (seq, test, awk, hostname, sleep, cat, …), Debian's base-passwd users, CMD bash as
# debian:jessie. The DNS specs' jessie querier runs `dig +notcp|+tcp +noall +answer +search …`,
# `dig +short …` and `getent hosts …` under sh (test/e2e/network/dns_common.go). coredns is absent:
# no spec runs /coredns from this image (the CoreDNS server pod of dns_common.go runs agnhost's,
# for the configurable-resolv.conf spec, not [Conformance]).
build_jessie_dnsutils_image() {
  local r=$1 path_env=$2 t
  busybox_rootfs "$r" full
  for t in /usr/bin/dig /usr/bin/nslookup /usr/bin/host; do
    copy_deb_binary "$t" "$r" "$t" "${DNSUTILS_DEBS[@]}" || {
      log "WARNING: Debian's bind9-dnsutils cannot be had: $JESSIE_DNSUTILS_IMAGE not built"
      return 0
    }
  done
  copy_with_libs "$(command -v getent)" "$r" /usr/bin/getent
  copy_with_libs "$(readlink -f "$(command -v bash)")" "$r" /bin/bash
  # Debian's /bin/sh; busybox's sh would run its own nslookup before PATH's.
  copy_with_libs "$(readlink -f "$(command -v dash)")" "$r" /bin/dash
  ln -sf dash "$r/bin/sh"
  image_files jessie-dnsutils "$r"
  if [ -f /usr/share/base-passwd/passwd.master ]; then
    cp /usr/share/base-passwd/passwd.master "$r/etc/passwd"
    cp /usr/share/base-passwd/group.master "$r/etc/group"
  else
    printf 'root:x:0:0:root:/root:/bin/bash\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n' >"$r/etc/passwd"
    printf 'root:x:0:\nnogroup:x:65534:\n' >"$r/etc/group"
  fi
  log "building $JESSIE_DNSUTILS_IMAGE from Debian's bind9-dnsutils $(dpkg-deb -f "$(debian_package bind9-dnsutils)"/bind9-dnsutils_*.deb Version)"
  tar -C "$r" -c . | docker import --change "$path_env" --change 'CMD ["bash"]' - "$JESSIE_DNSUTILS_IMAGE" >/dev/null
}

# build_update_demo_image NAME IMAGE: test/images/NAME/Dockerfile (kitten, nautilus): FROM
# agnhost, COPY html/NAME.jpg and html/data.json to / (agnhost has no WORKDIR), CMD
# ["test-webserver"], which serves / on port 80 (test/images/agnhost/test-webserver). The same
# layer on the local agnhost image, by docker create, cp and commit (no builder needed: this
# docker CLI has no buildx and the engine's legacy builder is deprecated).
build_update_demo_image() {
  local name=$1 image=$2 html cid rc=0
  html=$(k8s_source)/test/images/$name/html
  image_present "$AGNHOST_IMAGE" || { log "WARNING: no $AGNHOST_IMAGE: $image not built"; return 0; }
  log "building $image from test/images/$name ($K8S_VERSION) on $AGNHOST_IMAGE"
  cid=$(docker create "$AGNHOST_IMAGE" test-webserver)
  docker cp "$html/$name.jpg" "$cid:/$name.jpg" && docker cp "$html/data.json" "$cid:/data.json" &&
    docker commit --message "test/images/$name: COPY html/$name.jpg html/data.json" \
      --change 'CMD ["test-webserver"]' "$cid" "$image" >/dev/null || rc=$?
  docker rm "$cid" >/dev/null
  [ "$rc" = 0 ] || die "building $image failed"
}

# ---------------------------------------------------------------------------------------------
# run

# The sealed namespace's addresses on its `lo` (test/helpers/netns.ts uses the same ones).
NODE_IPS=(10.200.0.1 10.200.0.2 10.200.0.3)
APISERVER_IP=10.200.0.10
CLUSTER_DNS_IP=10.0.0.10

# run_sealed ARGS…: `run` inside a fresh network namespace with no link or route out (re-run under
# nsenter --net, which keeps the mount namespace: dockerd needs the machine's cgroup mounts); the
# namespace is deleted afterwards.
run_sealed() {
  if [ -n "${NODELET_CONFORMANCE_NETNS:-}" ]; then run "$@"; return; fi
  [ "$(id -u)" = 0 ] || die "run needs root: a network namespace, a Docker engine and CNI plugins"
  [ -x /usr/lib/cni/bridge ] || die "Debian's containernetworking-plugins are needed (/usr/lib/cni)"
  local ns=nodelet-conf-$$ rc=0 a pkg
  for pkg in "${IMAGE_DEBS[@]}"; do debian_package "$pkg" >/dev/null || log "WARNING: apt-get download $pkg failed"; done
  # Builds fetch Go modules: done here, outside the namespace (cached by version).
  "$ROOT/scripts/control-plane.sh" build >/dev/null
  build_e2e >/dev/null
  "$ROOT/scripts/cluster-dns.sh" build >/dev/null
  "$ROOT/scripts/image-registry.sh" build >/dev/null
  ip netns del "$ns" 2>/dev/null || true
  ip netns add "$ns"
  # shellcheck disable=SC2064
  trap "ip netns del '$ns' 2>/dev/null" EXIT
  ip -n "$ns" link set lo up
  for a in "${NODE_IPS[@]}" "$APISERVER_IP"; do ip -n "$ns" addr add "$a/32" dev lo; done
  ip netns exec "$ns" sysctl -q -w net.ipv4.ip_forward=1
  modprobe br_netfilter 2>/dev/null || true
  ip netns exec "$ns" sysctl -q -w net.bridge.bridge-nf-call-iptables=1 2>/dev/null || log "no br_netfilter: traffic between pods of one bridge skips iptables"
  [ -z "$(ip -n "$ns" -o route show table main)" ] || die "namespace $ns has a route: not sealed"
  [ "$(ip -n "$ns" -o link | awk -F': ' '{ print $2 }' | tr '\n' ' ')" = "lo " ] || die "namespace $ns has a link besides lo: not sealed"
  # The Service range to `lo`, so processes of the namespace (e2e.test) can dial ClusterIPs: a packet
  # needs a route before kube-proxy's nat OUTPUT rules rewrite it to a pod IP; unrewritten, it dies on lo.
  ip -n "$ns" route add 10.0.0.0/24 dev lo src "$APISERVER_IP"
  log "inside sealed network namespace $ns"
  NODELET_CONFORMANCE_NETNS=$ns nsenter --net="/run/netns/$ns" -- "$0" run "$@" || rc=$?
  return "$rc"
}

# node_network NAME INDEX DIR: the CNI network of one node in DIR/net.d — its own bridge, host-local
# leases in DIR/leases, the range from the Node's podCIDR (the `ipRanges` capability), portmap.
node_network() {
  local name=$1 i=$2 dir=$3
  mkdir -p "$dir/net.d"
  cat >"$dir/net.d/10-$name.conflist" <<EOF
{
  "cniVersion": "1.0.0",
  "name": "$name",
  "plugins": [
    { "type": "bridge", "bridge": "cni$i", "isGateway": true, "hairpinMode": true,
      "capabilities": { "ipRanges": true },
      "ipam": { "type": "host-local", "dataDir": "$dir/leases", "routes": [{ "dst": "0.0.0.0/0" }] } },
    { "type": "portmap", "capabilities": { "portMappings": true } }
  ]
}
EOF
}

# ---------------------------------------------------------------------------------------------
# The run's image registries

# Two distribution registries on the namespace's loopback (scripts/image-registry.sh), where the
# nodes' engine pulls over plain HTTP: an open one for every image the suite names, and one that
# demands credentials, standing for the suite's authenticated registries (the spec that pulls from
# a private registry without a secret must be refused for that reason, not for a missing host).
# Not port 5000: since 1.35 the private-registry spec runs agnhost's fake-registry-server as a
# hostNetwork pod on :5000 (test/e2e/framework/registry/registry.go, SetupRegistry) in the nodes'
# namespace, which is this one.
REGISTRY=127.0.0.1:5100
AUTH_REGISTRY=127.0.0.1:5101

# repo_list FILE: the suite's KUBE_TEST_REPO_LIST (test/utils/image/manifest.go, RegistryList):
# every registry it pulls from mapped into the run's, with its path kept, so registry.k8s.io/X
# becomes $REGISTRY/X. invalidRegistry stays a name nothing resolves.
repo_list() {
  cat >"$1" <<EOF
gcAuthenticatedRegistry: $AUTH_REGISTRY/authenticated-image-pulling
privateRegistry: $AUTH_REGISTRY/k8s-authenticated-test
promoterE2eRegistry: $REGISTRY/e2e-test-images
buildImageRegistry: $REGISTRY/build-image
gcEtcdRegistry: $REGISTRY
gcRegistry: $REGISTRY
sigStorageRegistry: $REGISTRY/sig-storage
dockerLibraryRegistry: $REGISTRY/library
cloudProviderGcpRegistry: $REGISTRY/cloud-provider-gcp
EOF
}

# registry_name IMAGE: the name the suite uses for IMAGE under repo_list.
registry_name() {
  case $1 in
    registry.k8s.io/*) echo "$REGISTRY/${1#registry.k8s.io/}" ;;
    *) die "$1: only registry.k8s.io images are built here" ;;
  esac
}

# publish_images LIST: every image built here pushed to $REGISTRY under the name the suite asks
# for with LIST, and that tag then removed from the engine, so each first use is a real pull (the
# layers stay: the original tags keep them, so a pull moves manifests and configs only).
publish_images() {
  local list=$1 listed img name n=0
  listed=$(KUBE_TEST_REPO_LIST=$list "$E2E" --list-images 2>/dev/null) || die "e2e.test --list-images with $list failed"
  for img in "${SUITE_IMAGES[@]}"; do
    image_present "$img" || { log "WARNING: $img was not built: not in the registry"; continue; }
    name=$(registry_name "$img")
    grep -qxF "$name" <<<"$listed" || die "$name (for $img) is not an image of e2e.test with $list: update repo_list"
    docker tag "$img" "$name"
    docker push -q "$name" >/dev/null || die "pushing $name to $REGISTRY failed"
    docker image rm "$name" >/dev/null
    n=$((n + 1))
  done
  log "pushed $n images to $REGISTRY; the suite pulls them from there"
}

NODELET_PIDS=()
DOCKER_STATE=
REGISTRY_DIR=
CP_DIR=
OUT=

cleanup() {
  local rc=$?
  set +e
  local pid
  # nodelet ends on SIGTERM; wait for each so its last log lines land in OUT.
  for pid in "${NODELET_PIDS[@]}"; do kill -TERM "$pid" 2>/dev/null; done
  for pid in "${NODELET_PIDS[@]}"; do wait "$pid" 2>/dev/null; done
  if [ -n "$CP_DIR" ] && [ -d "$CP_DIR" ]; then
    cp "$CP_DIR"/*.log "$OUT/" 2>/dev/null
    "$ROOT/scripts/control-plane.sh" stop "$CP_DIR" >/dev/null 2>&1
  fi
  if [ -n "$REGISTRY_DIR" ]; then
    "$ROOT/scripts/image-registry.sh" stop "$REGISTRY_DIR/open"
    "$ROOT/scripts/image-registry.sh" stop "$REGISTRY_DIR/auth"
  fi
  if [ -n "$DOCKER_STATE" ]; then
    cp "$DOCKER_STATE/dockerd.log" "$OUT/" 2>/dev/null
    "$ROOT/scripts/docker-engine.sh" stop "$DOCKER_STATE" >/dev/null 2>&1
  fi
  # A node that stops leaves its pods' volumes mounted, as the kubelet does (a restarted node finds
  # them); this run's nodes never come back, so OUT keeps their files but none of their mounts.
  local mnt
  for mnt in $(findmnt -rn -o TARGET | grep -F "$OUT/root-" | sort -r); do umount "$mnt" 2>/dev/null || umount -l "$mnt"; done
  exit "$rc"
}

run() {
  local t0=$SECONDS
  OUT=${1:-/tmp/nodelet-conformance/$(date -u +%Y%m%dT%H%M%SZ)}
  mkdir -p "$OUT"
  OUT=$(cd "$OUT" && pwd)
  local focus skip_file=${CONFORMANCE_SKIP_FILE:-$ROOT/test/conformance/skip.yaml}
  focus=$(suite_focus)
  local nodes=${CONFORMANCE_NODES:-$(suite_nodes)} procs=${CONFORMANCE_PROCS:-4} timeout=${CONFORMANCE_TIMEOUT:-3h}
  [ -f "$ROOT/dist/cli.js" ] || die "dist/cli.js missing: run \`npm run build\` first"
  command -v kubectl >/dev/null 2>&1 || die "kubectl is needed (to wait for the nodes)"

  "$ROOT/scripts/control-plane.sh" build >/dev/null
  build_e2e >/dev/null
  local skip
  skip=$(node "$ROOT/test/conformance/report.mjs" skip-regex "$skip_file") || die "bad skip list $skip_file"

  trap cleanup EXIT
  # Not under /tmp: HostPath specs bind-mount /tmp, and dockerd refuses a private bind of a
  # directory that holds its own data root.
  DOCKER_STATE=$(mktemp -d /var/tmp/nodelet-conformance-docker.XXXXXX)
  # Some specs pull on purpose from registries outside (an invalid one): offline, the engine's only
  # way out is a proxy on a closed loopback port, so such a pull fails at once on 127.0.0.1 and
  # nothing leaves the machine, not even a DNS query; the run's own registries are on loopback.
  DOCKER_HOST=$(NODELET_ENGINE_OFFLINE=1 "$ROOT/scripts/docker-engine.sh" private "$DOCKER_STATE")
  export DOCKER_HOST
  "$ROOT/scripts/docker-engine.sh" images
  build_images
  REGISTRY_DIR=$OUT/registry
  "$ROOT/scripts/image-registry.sh" start "$REGISTRY_DIR/open" "$REGISTRY"
  # A password nobody is told: no spec has credentials for the suite's private registries.
  "$ROOT/scripts/image-registry.sh" start "$REGISTRY_DIR/auth" "$AUTH_REGISTRY" e2e "$(head -c 18 /dev/urandom | base64)"
  repo_list "$OUT/repo-list.yaml"
  publish_images "$OUT/repo-list.yaml"
  export KUBE_TEST_REPO_LIST=$OUT/repo-list.yaml

  CP_DIR=$(mktemp -d /tmp/nodelet-conformance-cp.XXXXXX)
  local admin
  admin=$(NODELET_APISERVER_ADDRESS=$APISERVER_IP "$ROOT/scripts/control-plane.sh" start "$CP_DIR")
  # shellcheck source=/dev/null
  . "$CP_DIR/env"

  local i name kubeconfig port ip names=()
  [ "$nodes" -le "${#NODE_IPS[@]}" ] || die "CONFORMANCE_NODES=$nodes: at most ${#NODE_IPS[@]} nodes"
  for ((i = 0; i < nodes; i++)); do
    name=nodelet-$((i + 1))
    names+=("$name")
    kubeconfig=$("$ROOT/scripts/control-plane.sh" node-kubeconfig "$CP_DIR" "$name")
    # Each node has an address of its own, so every one serves on the kubelet's port: the e2e
    # framework reaches nodes through `nodes/<name>:10250/proxy` (ports.KubeletPort), whatever
    # the Node's daemonEndpoints say.
    port=10250
    ip=${NODE_IPS[$i]}
    mkdir -p "$OUT/root-$name"
    node_network "$name" "$i" "$OUT/cni-$name"
    # Served on the node IP, where the apiserver dials its nodes (their InternalIP).
    node "$ROOT/dist/cli.js" --kubeconfig "$kubeconfig" --hostname-override "$name" --node-ip "$ip" \
      --address "$ip" --port "$port" --client-ca-file "$CA_FILE" --anonymous-auth=false \
      --authentication-token-webhook --authorization-mode Webhook \
      --root-dir "$OUT/root-$name" --docker-endpoint "$DOCKER_HOST" \
      --pod-infra-container-image registry.k8s.io/pause:3.10 \
      --network-plugin=cni --cni-bin-dir /usr/lib/cni \
      --cluster-dns "$CLUSTER_DNS_IP" --cluster-domain cluster.local \
      --cni-conf-dir "$OUT/cni-$name/net.d" --cni-cache-dir "$OUT/cni-$name/cache" \
      </dev/null >"$OUT/nodelet-$name.log" 2>&1 &
    NODELET_PIDS+=($!)
    log "nodelet $name on $ip:$port (pid $!, log $OUT/nodelet-$name.log)"
  done
  for name in "${names[@]}"; do
    kubectl --kubeconfig "$admin" wait --for=create "node/$name" --timeout=60s >/dev/null ||
      die "node $name did not register; see $OUT/nodelet-$name.log"
    kubectl --kubeconfig "$admin" wait --for=condition=Ready "node/$name" --timeout=60s >/dev/null ||
      die "node $name did not become Ready; see $OUT/nodelet-$name.log"
  done
  # One network stack, one kube-proxy; then CoreDNS as a Deployment on the nodes.
  "$ROOT/scripts/control-plane.sh" start-proxy "$CP_DIR" "${names[0]}"
  "$ROOT/scripts/cluster-dns.sh" deploy "$admin" "$CLUSTER_DNS_IP"
  log "control plane and ${#names[@]} nodes ready after $((SECONDS - t0)) s; running e2e.test (focus $focus, $procs processes)"

  local e2e_rc=0
  # ginkgo runs the precompiled suite in $procs processes and merges their reports; the
  # framework's --report-dir writes junit_01.xml. Images are never pre-pulled.
  (cd "$OUT" && "$GINKGO" --procs="$procs" --timeout="$timeout" --no-color --silence-skips \
    --focus="$focus" --skip="$skip" --output-dir="$OUT" "$E2E" -- \
    --kubeconfig="$admin" --provider=skeleton --report-dir="$OUT" --e2e-output-dir="$OUT" \
    --prepull-images=false --disable-log-dump --node-os-distro=debian \
    --kubectl-path="$(command -v kubectl)" 2>&1) | tee "$OUT/e2e.log" >&2 || e2e_rc=$?

  local report_rc=0
  summary "$OUT" "$skip_file" || report_rc=$?
  log "done in $((SECONDS - t0)) s; e2e.test exited $e2e_rc; reports in $OUT"
  # A spec outside the skip list that failed fails the run; so does a suite that could not run.
  [ "$report_rc" -eq 0 ] || return "$report_rc"
  [ "$e2e_rc" -eq 0 ] || return "$e2e_rc"
}

# The suite CONFORMANCE_SUITE names (set by --suite): its focus and its number of nodes.
suite_focus() {
  case ${CONFORMANCE_SUITE:-node} in
    node) echo "${CONFORMANCE_FOCUS:-\[NodeConformance\]}" ;;
    full) echo "${CONFORMANCE_FOCUS:-\[Conformance\]}" ;;
    *) die "CONFORMANCE_SUITE (--suite) must be node or full, not ${CONFORMANCE_SUITE}" ;;
  esac
}
suite_nodes() { case ${CONFORMANCE_SUITE:-node} in full) echo 3 ;; *) echo 2 ;; esac; }

summary() {
  local out=$1 skip_file=${2:-${CONFORMANCE_SKIP_FILE:-$ROOT/test/conformance/skip.yaml}} focus
  focus=$(suite_focus)
  [ -f "$out/junit_01.xml" ] || die "$out/junit_01.xml missing: the suite did not finish"
  node "$ROOT/test/conformance/report.mjs" summary "$out/junit_01.xml" "$skip_file" \
    --focus "$focus" --out "$out/summary.md"
}

cmd=${1:-}
[ $# -eq 0 ] || shift
# --suite node|full (after run or summary) is CONFORMANCE_SUITE, which the sealed re-run inherits.
if [ "${1:-}" = --suite ]; then
  [ $# -ge 2 ] || usage
  export CONFORMANCE_SUITE=$2
  shift 2
  suite_focus >/dev/null
fi
case $cmd in
  build-e2e) [ $# -eq 0 ] || usage; build_e2e ;;
  images) [ $# -eq 0 ] || usage; build_images ;;
  run) [ $# -le 1 ] || usage; run_sealed "${1:-}" ;;
  summary) [ $# -eq 1 ] || usage; summary "$1" ;;
  *) usage ;;
esac
