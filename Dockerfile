# nodelet in a container. It drives the host's Docker engine through its socket:
#   docker build -t nodelet .
#   docker run -d --name nodelet --network host --pid host --privileged \
#     -v /var/run/docker.sock:/var/run/docker.sock \
#     -v /var/lib/nodelet:/var/lib/nodelet:rshared \
#     -v /etc/kubernetes/manifests:/etc/kubernetes/manifests:ro \
#     nodelet --pod-manifest-path /etc/kubernetes/manifests
# What each option is for:
#   --network host  the API listens on the host's loopback (127.0.0.1:10250 by default), and the
#                   kubeconfig nodelet writes under its root dir points there.
#   --pid host      port-forward runs `nsenter -t <sandbox PID> -n -- node …` (one helper per pod,
#                   which hands nodelet connected sockets): the PID Docker reports for a pod's
#                   sandbox is a host PID, found only in the host's PID namespace.
#   --privileged    entering another network namespace (setns(2)) needs CAP_SYS_ADMIN, reading
#                   /proc/<PID>/ns/net of a process nodelet did not start needs CAP_SYS_PTRACE, and
#                   tmpfs (`emptyDir: {medium: Memory}`) volumes are mounts. Where --privileged is
#                   not allowed, `--cap-add SYS_ADMIN --cap-add SYS_PTRACE --security-opt
#                   apparmor=unconfined` is the narrower equivalent (the image test runs that way).
#   root dir        nodelet makes pod files (volumes, /etc/hosts, termination logs) under --root-dir
#                   and hands their paths to dockerd as bind-mount sources, so the directory must be
#                   mounted at the same path as on the host; rshared lets tmpfs volumes propagate.
# Without a serving certificate or authenticator nodelet serves HTTPS with credentials it
# generates, and writes an admin kubeconfig under its root dir (see the README's "Try it").
#
# The base is a build argument, for builds without a registry (the image test makes one locally
# from this machine's Node.js, see test/helpers/node-base-image.ts):
#   docker build --build-arg BASE=nodelet.local/node-base:20 -t nodelet .
# It needs node, npm and a POSIX shell; port-forward's nsenter (util-linux) is installed from
# Debian when the base lacks it. A build context holding an npm cache in .npm-cache/ can build offline
# with --build-arg NPM_FLAGS=--offline.
ARG BASE=node:20-bookworm-slim

FROM ${BASE} AS build
WORKDIR /src
ARG NPM_FLAGS=
COPY package.json package-lock.json ./
# The context's npm cache when it has one: `.npm-cach[e]` matches it or nothing (package.json is
# listed too because the legacy builder refuses a COPY that copies nothing at all).
COPY package.json .npm-cach[e] /src/.npm-cache/
# No install scripts: the native add-ons nodelet can use ship prebuilt or are optional.
RUN npm ci --no-audit --no-fund --ignore-scripts --cache /src/.npm-cache ${NPM_FLAGS}
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
RUN npm run build && npm prune --omit=dev --ignore-scripts --cache /src/.npm-cache ${NPM_FLAGS}

FROM ${BASE}
# Port-forward enters pod network namespaces with util-linux's nsenter (Debian's node images have it).
RUN if ! command -v nsenter >/dev/null; then \
      apt-get update && apt-get install -y --no-install-recommends util-linux && rm -rf /var/lib/apt/lists/*; \
    fi
WORKDIR /opt/nodelet
COPY --from=build /src/node_modules ./node_modules
COPY --from=build /src/dist ./dist
COPY package.json openapi.yaml ./
# The V8 flag of dist/cli.js's shebang (see src/cli.ts).
ENTRYPOINT ["node", "--initial-old-space-size=64", "/opt/nodelet/dist/cli.js"]
