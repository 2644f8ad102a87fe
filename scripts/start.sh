#!/usr/bin/env bash
# `npm start`: nodelet on its embedded default — the local Docker engine (or a private one started
# here), the example pods in examples/pods (images built locally, no registry), API on
# https://127.0.0.1:10250 with a generated CA and admin token: nodelet prints the kubeconfig to use
# (<root-dir>/kubeconfig). Extra arguments are passed to nodelet: `npm start -- --port 10251 -v 4`,
# `npm start -- --insecure-dev` for plain HTTP without authentication (development only).
# `npm start -- --network-plugin=cni` gives pods IPs through CNI: Debian's containernetworking-plugins
# are installed here when missing (only then), and a config must be in --cni-conf-dir
# (/etc/cni/net.d; examples/cni/10-nodelet-bridge.conflist is one).
set -euo pipefail
cd "$(dirname "$0")/.."
prev=
for arg in "$@"; do
  [ "$prev" = --network-plugin ] && arg=--network-plugin=$arg
  prev=$arg
  case "$arg" in
    --network-plugin=cni)
      if [ ! -x /usr/lib/cni/bridge ] && [ ! -x /opt/cni/bin/bridge ]; then
        [ "$(id -u)" = 0 ] || { echo "start: --network-plugin=cni needs the CNI plugins: install containernetworking-plugins" >&2; exit 1; }
        echo "start: installing Debian's containernetworking-plugins for --network-plugin=cni" >&2
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq containernetworking-plugins >&2
      fi ;;
  esac
done
DOCKER_HOST=$(scripts/docker-engine.sh ensure)
export DOCKER_HOST
scripts/docker-engine.sh images
exec node --initial-old-space-size=64 dist/cli.js --docker-endpoint "$DOCKER_HOST" --pod-manifest-path examples/pods "$@"
