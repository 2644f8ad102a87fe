/**
 * What this node reports in `Node.status.declaredFeatures` (NodeDeclaredFeatures, GA since 1.37):
 * exactly the features of the registry (k8s.io/component-helpers/nodedeclaredfeatures/features/
 * registry.go) that nodelet implements, sorted as `Framework.DiscoverNodeFeatures` returns them.
 * The kubelet derives its list from its own feature gates (pkg/kubelet/kubelet_node_declared_features.go);
 * nodelet has no gates, so the list is what the code does.
 *
 * | feature | declared | why |
 * |---|---|---|
 * | `ExtendWebSocketsToKubelet` | yes | exec and attach serve WebSocket `v5.channel.k8s.io` (and v4 … `channel.k8s.io`), port-forward the `SPDY/3.1+portforward.k8s.io` tunnel, natively (src/streaming/remotecommand/websocket.ts, src/streaming/websocket/tunnel.ts): the apiserver may hand a client's WebSocket upgrade to the node untranslated (pkg/registry/core/pod/rest/subresources.go) |
 * | `InPlacePodLevelResourcesVerticalScaling` | yes | pod-level `spec.resources` (cpu and memory) resize in place: the pod cgroup and the containers that follow its limits (src/kubelet/resize.ts, allocation.ts) |
 * | `InPlacePodVerticalScalingInitContainers` | yes | every init container resizes in place, run-to-completion ones too (src/kubelet/allocation.ts `resizableContainers`): the apiserver refuses a resize of a non-sidecar init container's resources for a node that does not declare it (k8s.io/component-helpers/nodedeclaredfeatures/features/inplacepodresize/nonsidecar_initcontainers_resize.go) |
 * | `InPlacePodVerticalScalingMemoryBackedVolumes` | no | containers resize in place (src/kubelet/resize.ts), but not a memory-backed emptyDir's size |
 * | `RestartAllContainersOnContainerExits` | yes | `restartPolicyRules` with `action: RestartAllContainers` on init, sidecar and regular containers restarts the whole pod in place (src/kubelet/restart-all.ts): the apiserver's NodeDeclaredFeatureValidator places such pods only on nodes that declare it |
 * | `UserNamespacesHostNetworkSupport` | no | `hostUsers: false` is refused |
 * | `VolumeBindMountOptions` | no | no bind-mount options |
 * | `DRANodeAllocatableResources`, `DRAOptionalNodeOperations` | no | no DRA |
 */
export const DECLARED_FEATURES: readonly string[] = Object.freeze(['ExtendWebSocketsToKubelet', 'InPlacePodLevelResourcesVerticalScaling', 'InPlacePodVerticalScalingInitContainers', 'RestartAllContainersOnContainerExits']);
