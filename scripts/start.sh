#!/usr/bin/env bash
# `npm start`: nodelet on its embedded default — the local Docker engine (or a private one started
# here), the example pods in examples/pods (images built locally, no registry), API on
# https://127.0.0.1:10250 with a generated CA and admin token: nodelet prints the kubeconfig to use
# (<root-dir>/kubeconfig). Extra arguments are passed to nodelet: `npm start -- --port 10251 -v 4`,
# `npm start -- --insecure-dev` for plain HTTP without authentication (development only).
set -euo pipefail
cd "$(dirname "$0")/.."
DOCKER_HOST=$(scripts/docker-engine.sh ensure)
export DOCKER_HOST
scripts/docker-engine.sh images
# --network-plugin=cni runs CNI plugins: Debian's, unless some are installed upstream's way already.
for arg in "$@"; do
  if [ "$arg" = --network-plugin=cni ] && [ ! -x /opt/cni/bin/bridge ] && [ ! -x /usr/lib/cni/bridge ]; then
    [ "$(id -u)" = 0 ] || { echo "start: --network-plugin=cni needs CNI plugins: apt-get install containernetworking-plugins" >&2; exit 1; }
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq containernetworking-plugins >&2 || { apt-get update -qq >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq containernetworking-plugins >&2; }
  fi
done
exec node --initial-old-space-size=64 dist/cli.js --docker-endpoint "$DOCKER_HOST" --pod-manifest-path examples/pods "$@"
