#!/usr/bin/env bash
# Find or start a Docker engine for nodelet, and build the local images it needs.
#
#   scripts/docker-engine.sh ensure        print a DOCKER_HOST that answers: $DOCKER_HOST, else the
#                                          default socket, else a private engine started here
#   scripts/docker-engine.sh private DIR   start a private engine with its state in DIR and print
#                                          its DOCKER_HOST (tests use this: never the host's engine)
#   scripts/docker-engine.sh podman DIR    start a private Podman API service (Docker-compatible)
#                                          with its state in DIR and print its DOCKER_HOST
#   scripts/docker-engine.sh restart DIR [--live-restore]
#                                          restart the private dockerd of DIR as `systemctl restart
#                                          docker` does, with the same flags, socket, data root and
#                                          exec root; --live-restore: its containers keep running
#                                          through it, else they stop with it (dockerd's default)
#   scripts/docker-engine.sh stop DIR      stop the private engine (dockerd or Podman) in DIR and
#                                          delete DIR
#   scripts/docker-engine.sh images        build the local images (busybox, pause) when missing
#
# A private engine runs as `dockerd --iptables=false --bridge=none` with its own socket, data root
# and exec root, so it never touches the host's networking or another engine's containers. Its
# daemon config is DIR/daemon.json (the host's /etc/docker/daemon.json never applies): `restart`
# writes `live-restore` there and reloads it (SIGHUP; dockerd re-reads live-restore on reload,
# moby daemon/reload.go), so the running engine's shutdown follows it, then starts it again.
# A private Podman service is `podman system service --time=0` with its own socket, storage
# (graphroot, runroot), tmp dir, file locks and event log under DIR, chosen by a containers.conf
# and a storage.conf there (CONTAINERS_CONF, CONTAINERS_STORAGE_CONF): it never sees the host's
# Podman containers or images. cgroupfs unless systemd runs the machine.
# No registry is needed: images are built from Debian's busybox-static with `docker import`
# (the docker CLI talks to either engine).
set -euo pipefail
LOG_NAME=docker-engine
# shellcheck source=scripts/lib.sh
. "$(dirname "$0")/lib.sh"

BUSYBOX_IMAGE=${NODELET_BUSYBOX_IMAGE:-nodelet.local/busybox:1.35}
PAUSE_IMAGE=${NODELET_PAUSE_IMAGE:-registry.k8s.io/pause:3.10}

need_packages() {
  local missing=()
  command -v dockerd >/dev/null 2>&1 || missing+=(docker.io)
  command -v docker >/dev/null 2>&1 || missing+=(docker.io)
  [ -x /bin/busybox ] || [ -x /usr/bin/busybox ] || missing+=(busybox-static)
  command -v nsenter >/dev/null 2>&1 || missing+=(util-linux)
  # Port-forward enters the pod's network namespace with nsenter (above); TLS certificates come from openssl.
  command -v openssl >/dev/null 2>&1 || missing+=(openssl)
  install_missing "${missing[@]}"
}

need_podman() {
  local missing=()
  command -v podman >/dev/null 2>&1 || missing+=(podman)
  command -v conmon >/dev/null 2>&1 || missing+=(conmon)
  # runc, as dockerd uses: crun 1.8 refuses a hybrid cgroup hierarchy (v1 with a v2 mount).
  command -v runc >/dev/null 2>&1 || missing+=(runc)
  # Pods use network none: no slirp4netns, netavark or CNI plugins; storage is kernel overlay.
  install_missing --no-install-recommends "${missing[@]}"
}

answers() { DOCKER_HOST="$1" timeout 5 docker version --format '{{.Server.Version}}' >/dev/null 2>&1; }

# NODELET_ENGINE_OFFLINE=1 (scripts/test.sh, scripts/test-soak.sh and the conformance run set it):
# the engine's only way out is a proxy on a closed loopback port, so a pull from anywhere but a
# registry on loopback fails at once on 127.0.0.1 and nothing leaves the machine, not even the DNS
# query for a registry's name. Go's proxy selection never proxies a loopback address, so the tests'
# registries on 127.0.0.1 are still reached directly.
offline_env() {
  [ "${NODELET_ENGINE_OFFLINE:-}" = 1 ] || return 0
  echo HTTP_PROXY=http://127.0.0.1:9 HTTPS_PROXY=http://127.0.0.1:9 http_proxy=http://127.0.0.1:9 https_proxy=http://127.0.0.1:9 NO_PROXY= no_proxy=
}

# Starts dockerd for DIR with EXECROOT and waits until it answers; prints its DOCKER_HOST.
launch_dockerd() {
  local dir=$1 execroot=$2
  local sock="unix://$dir/docker.sock"
  # shellcheck disable=SC2046
  env $(offline_env) dockerd --config-file "$dir/daemon.json" --host "$sock" --data-root "$dir/root" --exec-root "$execroot" \
    --pidfile "$dir/docker.pid" --iptables=false --ip6tables=false --bridge=none \
    >>"$dir/dockerd.log" 2>&1 &
  for _ in $(seq 1 150); do
    if answers "$sock"; then echo "$sock"; return 0; fi
    sleep 0.2
  done
  log "private dockerd did not answer; its log:"; tail -20 "$dir/dockerd.log" >&2
  exit 1
}

start_private() {
  local dir=$1
  need_packages
  mkdir -p "$dir"
  # A short exec-root path: containerd's socket paths must stay under 108 bytes.
  local execroot
  execroot=$(mktemp -d /tmp/nodelet-exec.XXXXXX)
  echo "$execroot" > "$dir/execroot"
  # Kept when DIR already has one (an engine started again on its state).
  [ -f "$dir/daemon.json" ] || echo '{}' > "$dir/daemon.json"
  launch_dockerd "$dir" "$execroot"
}

# Whether process PID has exited (gone, or a zombie its new parent has not reaped yet).
exited() {
  local st
  st=$(cut -d' ' -f3 "/proc/$1/stat" 2>/dev/null) || return 0
  [ -z "$st" ] || [ "$st" = Z ]
}

restart_private() {
  local dir=$1 live=$2
  [ -f "$dir/docker.pid" ] && [ -f "$dir/execroot" ] || { log "no private dockerd in $dir"; exit 1; }
  local pid sock="unix://$dir/docker.sock"
  pid=$(cat "$dir/docker.pid")
  printf '{"live-restore": %s}\n' "$live" > "$dir/daemon.json"
  kill -HUP "$pid"
  local applied=
  for _ in $(seq 1 100); do
    if [ "$(DOCKER_HOST=$sock timeout 5 docker info --format '{{.LiveRestoreEnabled}}' 2>/dev/null)" = "$live" ]; then applied=1; break; fi
    sleep 0.1
  done
  [ -n "$applied" ] || { log "dockerd $pid did not reload live-restore=$live; its log:"; tail -20 "$dir/dockerd.log" >&2; exit 1; }
  # SIGTERM, as `systemctl stop docker`: without live-restore dockerd stops every container first
  # (each within its stop timeout, 10 s), with it it leaves them to their shims.
  kill -TERM "$pid"
  for _ in $(seq 1 900); do exited "$pid" && break; sleep 0.1; done
  exited "$pid" || { log "dockerd $pid did not exit within 90 s of SIGTERM"; exit 1; }
  # The same exec root: containerd's state and the shims' sockets of running containers are there.
  launch_dockerd "$dir" "$(cat "$dir/execroot")"
}

start_podman() {
  local dir=$1
  need_packages
  need_podman
  mkdir -p "$dir"
  dir=$(cd "$dir" && pwd)
  local sock="unix://$dir/podman.sock"
  local cgroups=cgroupfs
  [ -d /run/systemd/system ] && cgroups=systemd
  printf '%s\n' '[containers]' 'log_driver = "k8s-file"' \
    '[network]' "network_config_dir = \"$dir/networks\"" \
    '[engine]' 'runtime = "runc"' "cgroup_manager = \"$cgroups\"" 'events_logger = "file"' \
    "events_logfile_path = \"$dir/events.log\"" 'lock_type = "file"' "tmp_dir = \"$dir/tmp\"" \
    "static_dir = \"$dir/root/libpod\"" "volume_path = \"$dir/root/volumes\"" >"$dir/containers.conf"
  printf '%s\n' '[storage]' 'driver = "overlay"' "graphroot = \"$dir/root\"" \
    "runroot = \"$dir/run\"" >"$dir/storage.conf"
  # shellcheck disable=SC2046
  env $(offline_env) CONTAINERS_CONF="$dir/containers.conf" CONTAINERS_STORAGE_CONF="$dir/storage.conf" \
    podman system service --time=0 "$sock" >"$dir/podman.log" 2>&1 &
  echo $! >"$dir/podman.pid"
  for _ in $(seq 1 150); do
    if answers "$sock"; then echo "$sock"; return 0; fi
    sleep 0.2
  done
  log "private Podman service did not answer; its log:"; tail -20 "$dir/podman.log" >&2
  exit 1
}

stop_private() {
  local dir=$1
  if [ -f "$dir/docker.pid" ]; then
    local pid; pid=$(cat "$dir/docker.pid")
    # Remove every container first so no shim outlives the engine.
    DOCKER_HOST="unix://$dir/docker.sock" timeout 60 sh -c \
      'ids=$(docker ps -aq); [ -z "$ids" ] || docker rm -f $ids >/dev/null' 2>/dev/null || true
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null || true
  fi
  if [ -f "$dir/podman.pid" ]; then
    local pid; pid=$(cat "$dir/podman.pid")
    DOCKER_HOST="unix://$dir/podman.sock" timeout 60 sh -c \
      'ids=$(docker ps -aq); [ -z "$ids" ] || docker rm -f $ids >/dev/null' 2>/dev/null || true
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null || true
    # Exec monitors (conmon) wait out their --exit-delay after the engine is gone: end those whose
    # paths are under this DIR (a unique temp dir), and only those.
    local left; left=$(pgrep -f -- "--exit-dir $dir/" || true)
    [ -z "$left" ] || kill $left 2>/dev/null || true
    for _ in $(seq 1 50); do pgrep -f -- "$dir/" >/dev/null || break; sleep 0.1; done
    umount -R "$dir/root/overlay" 2>/dev/null || umount -R -l "$dir/root/overlay" 2>/dev/null || true
  fi
  if [ -f "$dir/execroot" ]; then
    local er; er=$(cat "$dir/execroot")
    # dockerd bind-mounts its network namespace at <exec-root>/netns/default; one a killed dockerd
    # left mounted keeps rm from removing the directory and keeps that namespace alive (with any
    # CNI bridges in it) after `ip netns del`: detach what is mounted under it, deepest first.
    grep -o " $er/[^ ]*" /proc/self/mounts | sort -r | xargs -r -n1 umount -l 2>/dev/null || true
    umount -R "$er" 2>/dev/null || true; rm -rf "$er"
  fi
  umount -R "$dir/root" 2>/dev/null || true
  # Root filesystems an engine left mounted (stopped while stopping a container) keep rm from
  # removing their directories: detach what is still mounted under this DIR, deepest first.
  grep -o " $dir/root/[^ ]*" /proc/self/mounts | sort -r | xargs -r -n1 umount -l 2>/dev/null || true
  rm -rf "$dir"
}

build_images() {
  need_packages
  local bb; bb=$(command -v busybox)
  if ! docker image inspect "$BUSYBOX_IMAGE" >/dev/null 2>&1 || ! docker image inspect "$PAUSE_IMAGE" >/dev/null 2>&1; then
    local ctx; ctx=$(mktemp -d)
    mkdir -p "$ctx/rootfs/bin" "$ctx/rootfs/tmp" "$ctx/rootfs/etc" "$ctx/rootfs/www" "$ctx/rootfs/root"
    cp "$bb" "$ctx/rootfs/bin/busybox"
    # One link per applet, so `sh`, `sleep`, `httpd`, `cat`… exist as in a busybox image.
    for applet in $("$bb" --list); do
      [ "$applet" = busybox ] || ln -sf busybox "$ctx/rootfs/bin/$applet"
    done
    echo 'root:x:0:0:root:/root:/bin/sh' > "$ctx/rootfs/etc/passwd"
    echo 'root:x:0:' > "$ctx/rootfs/etc/group"
    echo 'hello from nodelet' > "$ctx/rootfs/www/index.html"
    chmod 1777 "$ctx/rootfs/tmp"
    if ! docker image inspect "$BUSYBOX_IMAGE" >/dev/null 2>&1; then
      log "building $BUSYBOX_IMAGE from $bb"
      tar -C "$ctx/rootfs" -c . | docker import \
        --change 'ENV PATH=/bin' --change 'CMD ["sh"]' - "$BUSYBOX_IMAGE" >/dev/null
    fi
    if ! docker image inspect "$PAUSE_IMAGE" >/dev/null 2>&1; then
      # The sandbox only holds the pod's namespaces; `sleep` as PID 1 is enough. Tagged with the
      # kubelet's default infra image name so the default configuration works offline.
      log "building $PAUSE_IMAGE (busybox sleep) locally"
      tar -C "$ctx/rootfs" -c . | docker import --change 'ENV PATH=/bin' \
        --change 'ENTRYPOINT ["/bin/sleep", "2147483647"]' - "$PAUSE_IMAGE" >/dev/null
    fi
    rm -rf "$ctx"
  fi
}

case "${1:-}" in
  ensure)
    for candidate in "${DOCKER_HOST:-}" unix:///var/run/docker.sock; do
      if [ -n "$candidate" ] && command -v docker >/dev/null 2>&1 && answers "$candidate"; then
        echo "$candidate"; exit 0
      fi
    done
    dir=${NODELET_DOCKER_DIR:-/var/lib/nodelet/docker}
    log "no Docker engine answers; starting a private one in $dir"
    start_private "$dir" ;;
  private) start_private "${2:?state directory}" ;;
  podman) start_podman "${2:?state directory}" ;;
  restart)
    case "${3:-}" in
      --live-restore) restart_private "${2:?state directory}" true ;;
      '') restart_private "${2:?state directory}" false ;;
      *) echo "usage: $0 restart DIR [--live-restore]" >&2; exit 2 ;;
    esac ;;
  stop) stop_private "${2:?state directory}" ;;
  images) build_images ;;
  *) echo "usage: $0 ensure | private DIR | podman DIR | restart DIR [--live-restore] | stop DIR | images" >&2; exit 2 ;;
esac
