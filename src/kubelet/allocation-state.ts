/**
 * The allocation manager's state and its checkpoint (pkg/kubelet/allocation/state): what is kept
 * per pod, the file's name under `--root-dir`, and the strict parse of a checkpoint read back (a
 * damaged one is refused whole). The manager that keeps and writes it is allocation.ts.
 */
import type { Container } from '../api/types.js';

/** A container's requests and limits as the API writes them (`v1.ResourceRequirements`, claims aside). */
export interface Resources {
  readonly limits?: Readonly<Record<string, string>>;
  readonly requests?: Readonly<Record<string, string>>;
}

/** What the allocation manager holds for one pod. */
export interface PodAllocation {
  /** The resources each resizable container was admitted (or last resized) with, by name. */
  readonly containers: Readonly<Record<string, Resources>>;
  /**
   * Containers created by a nodelet whose spec hash still covered the resources (runtime/hash.ts
   * `legacyHashContainer`): the resources and resize policy their spec had when they were first
   * recognised, so the legacy hash can still be checked after a resize. By container name.
   */
  readonly legacy?: Readonly<Record<string, Pick<Container, 'resources' | 'resizePolicy'>>>;
  /**
   * The pod-level `spec.resources` the pod was admitted (or last resized) with
   * (InPlacePodLevelResourcesVerticalScaling); `{}` for a pod without. Absent in a checkpoint
   * written before nodelet resized pod-level resources: they then follow the spec.
   */
  readonly pod?: Resources;
  /**
   * The pod-level resources last written to the pod's cgroup (the kubelet's actuated state,
   * `GetPodLevelResources`): set at admission, and per resource once a resize of it is applied.
   * Absent: the allocated ones.
   */
  readonly actuatedPod?: Resources;
  /**
   * The memory request (bytes) a running container was started or last updated with, where a
   * resize changed its allocation since (the kubelet's actuated container resources,
   * `SetContainerResources`): the one part of a container's resources no runtime reports back,
   * so a resize of it alone is still seen and applied (or restarts the container under a
   * `RestartContainer` memory policy). By container name; absent: the allocated one.
   */
  readonly actuatedMemoryRequests?: Readonly<Record<string, number>>;
}

/** The checkpoint file's name under `--root-dir`, as the kubelet's (pkg/kubelet/allocation/allocation_manager.go). */
export const ALLOCATED_PODS_STATE_FILE = 'allocated_pods_state';

/** The checkpoint's layout (nodelet's own; the kubelet's is a checksummed Go struct). */
export interface Checkpoint {
  readonly version: 1;
  readonly pods: Record<string, PodAllocation>;
}

/** The pod allocations of a checkpoint's text; undefined when it is not one (damaged or of another version). */
export function parseCheckpoint(text: string): Record<string, PodAllocation> | undefined {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (!isRecord(parsed) || parsed.version !== 1 || !isRecord(parsed.pods)) return undefined;
  const out: Record<string, PodAllocation> = {};
  for (const [uid, alloc] of Object.entries(parsed.pods)) {
    if (!isRecord(alloc) || !isRecord(alloc.containers)) return undefined;
    const containers: Record<string, Resources> = {};
    for (const [name, r] of Object.entries(alloc.containers)) {
      if (!isRecord(r) || !isResourceList(r.limits) || !isResourceList(r.requests)) return undefined;
      containers[name] = { ...(r.limits ? { limits: r.limits } : {}), ...(r.requests ? { requests: r.requests } : {}) };
    }
    const legacy = isRecord(alloc.legacy) ? (alloc.legacy as PodAllocation['legacy']) : undefined;
    const podLevel = resourcesFrom(alloc.pod);
    const actuatedPod = resourcesFrom(alloc.actuatedPod);
    if (podLevel === null || actuatedPod === null) return undefined;
    const memory = alloc.actuatedMemoryRequests;
    if (memory !== undefined && (!isRecord(memory) || !Object.values(memory).every((v) => Number.isSafeInteger(v) && (v as number) >= 0))) return undefined;
    const actuatedMemoryRequests = memory as Record<string, number> | undefined;
    out[uid] = {
      containers,
      ...(legacy ? { legacy } : {}),
      ...(podLevel ? { pod: podLevel } : {}),
      ...(actuatedPod ? { actuatedPod } : {}),
      ...(actuatedMemoryRequests && Object.keys(actuatedMemoryRequests).length ? { actuatedMemoryRequests } : {}),
    };
  }
  return out;
}

/** A checkpointed resource list pair: undefined when absent, null when malformed. */
function resourcesFrom(v: unknown): Resources | undefined | null {
  if (v === undefined) return undefined;
  if (!isRecord(v) || !isResourceList(v.limits) || !isResourceList(v.requests)) return null;
  return { ...(v.limits ? { limits: v.limits } : {}), ...(v.requests ? { requests: v.requests } : {}) };
}

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const isResourceList = (v: unknown): v is Record<string, string> | undefined => v === undefined || (isRecord(v) && Object.values(v).every((x) => typeof x === 'string'));
