# nodelet in a container. It drives the host's Docker engine through its socket:
#   docker build -t nodelet .
#   docker run -d --name nodelet --network host \
#     -v /var/run/docker.sock:/var/run/docker.sock \
#     -v /etc/kubernetes/manifests:/manifests:ro \
#     nodelet --pod-manifest-path /manifests
# With --network host the API listens on the host's 127.0.0.1:10250, as nodelet only serves
# plain HTTP on loopback. Port-forward enters pod network namespaces, which needs --pid host and
# CAP_SYS_ADMIN once that feature lands.
FROM node:20-bookworm-slim AS build
WORKDIR /src
COPY package.json package-lock.json tsconfig.json tsconfig.build.json ./
RUN npm ci --no-audit --no-fund
COPY src ./src
RUN npm run build && npm prune --omit=dev

FROM node:20-bookworm-slim
WORKDIR /opt/nodelet
COPY --from=build /src/node_modules ./node_modules
COPY --from=build /src/dist ./dist
COPY package.json openapi.yaml ./
ENTRYPOINT ["node", "/opt/nodelet/dist/cli.js"]
