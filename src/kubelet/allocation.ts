/**
 * The kubelet's allocation manager (pkg/kubelet/allocation/allocation_manager.go) and the pod
 * helpers it and the resize code share: which containers are resizable, a pod's resources as the
 * allocation keeps them, semantic equality of resource lists. Its state and checkpoint format are
 * allocation-state.ts; the decision on a resize (`canResizePod`) is resize-decision.ts.
 */
import { readFileSync } from 'node:fs';
import { mkdir, rename, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import type { Container, Pod } from '../api/types.js';
import { quantityOf } from '../api/quantity.js';
import { ALLOCATED_PODS_STATE_FILE, parseCheckpoint, type Checkpoint, type PodAllocation, type Resources } from './allocation-state.js';

/** The slice of a logger the allocation manager needs. */
export interface AllocationLogger {
  warn(obj: object, msg: string): void;
}

/**
 * The kubelet's allocation manager (pkg/kubelet/allocation/allocation_manager.go): the resources
 * each admitted pod's containers were given — at admission, then at each admitted resize — which
 * is what the node runs them with, whatever the spec asks for meanwhile. Checkpointed to
 * `<rootDir>/allocated_pods_state` on every change, so a restarted nodelet still knows what a
 * pending resize is measured against. Every container but the ephemeral ones is resizable
 * (`IsResizableContainer` with InPlacePodVerticalScalingInitContainers, GA in 1.37): regular
 * containers, sidecars and run-to-completion init containers.
 */
export class AllocationManager {
  readonly #pods = new Map<string, PodAllocation>();
  readonly #file: string | undefined;
  readonly #log: AllocationLogger | undefined;
  #writing: Promise<void> = Promise.resolve();
  /** A write is chained behind the one in flight and has not serialised the state yet. */
  #saveQueued = false;
  #dirMade = false;
  /** Checkpoint writes started or queued (tests read it). */
  writes = 0;

  /** Reads the checkpoint under `rootDir` (none: in memory only); a damaged one is logged and ignored. */
  constructor(opts: { rootDir?: string; log?: AllocationLogger } = {}) {
    this.#file = opts.rootDir ? join(opts.rootDir, ALLOCATED_PODS_STATE_FILE) : undefined;
    this.#log = opts.log;
    if (this.#file) this.#load(this.#file);
  }

  #load(file: string): void {
    let text: string;
    try {
      text = readFileSync(file, 'utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') this.#log?.warn({ err, file }, 'Cannot read the pod allocation checkpoint: starting without it');
      return;
    }
    const pods = parseCheckpoint(text);
    if (!pods) {
      // The kubelet panics here; nodelet re-allocates each pod from its spec instead.
      this.#log?.warn({ file }, 'The pod allocation checkpoint is damaged: starting without it');
      return;
    }
    for (const [uid, alloc] of Object.entries(pods)) this.#pods.set(uid, alloc);
  }

  /** Whether the pod was admitted (`IsPodAllocated`). */
  isAllocated(uid: string): boolean {
    return this.#pods.has(uid);
  }

  get(uid: string): PodAllocation | undefined {
    return this.#pods.get(uid);
  }

  /** UIDs of every pod with an allocation. */
  uids(): string[] {
    return [...this.#pods.keys()];
  }

  /**
   * `pod` with each resizable container's resources replaced by its allocation
   * (`UpdatePodFromAllocation`); the same object when nothing differs or nothing is allocated.
   */
  allocatedPod(pod: Pod): Pod {
    const alloc = this.#pods.get(pod.metadata?.uid ?? '');
    return alloc ? withAllocation(pod, alloc) : pod;
  }

  /** Records `pod`'s resizable containers' resources as allocated (`SetAllocatedResources`). */
  setAllocated(pod: Pod): void {
    const uid = pod.metadata?.uid ?? '';
    const previous = this.#pods.get(uid);
    const podLevel = podLevelResourcesOf(pod);
    // At admission the pod cgroup is made from the allocation; a resize leaves what was written.
    const actuatedPod = previous ? (previous.actuatedPod ?? previous.pod ?? podLevel) : podLevel;
    const memory = previous?.actuatedMemoryRequests;
    this.#pods.set(uid, { containers: allocationOf(pod), ...(previous?.legacy ? { legacy: previous.legacy } : {}), pod: podLevel, actuatedPod, ...(memory ? { actuatedMemoryRequests: memory } : {}) });
    this.#save();
  }

  /**
   * The memory request (bytes) container `name` of pod `uid` runs with when it differs from its
   * allocation (a resize admitted since it started or was last updated); undefined: the allocated one.
   */
  actuatedMemoryRequest(uid: string, name: string): number | undefined {
    return this.#pods.get(uid)?.actuatedMemoryRequests?.[name];
  }

  /**
   * Records the memory request container `name` runs with (`bytes`), or — undefined — that it runs
   * with its allocated one (it was started, or updated in place, from the allocation). Written only
   * when it changes.
   */
  setActuatedMemoryRequest(uid: string, name: string, bytes: number | undefined): void {
    const alloc = this.#pods.get(uid);
    if (!alloc || alloc.actuatedMemoryRequests?.[name] === bytes) return;
    const { [name]: _old, ...rest } = alloc.actuatedMemoryRequests ?? {};
    const next = bytes === undefined ? rest : { ...rest, [name]: bytes };
    const { actuatedMemoryRequests: _was, ...base } = alloc;
    this.#pods.set(uid, { ...base, ...(Object.keys(next).length ? { actuatedMemoryRequests: next } : {}) });
    this.#save();
  }

  /**
   * A pod allocated by a checkpoint written before pod-level resources were kept: its spec's
   * pod-level resources (what its cgroup was made with) are recorded as allocated and actuated,
   * so a later change of them is a resize. Nothing for any other pod.
   */
  adoptPodLevel(pod: Pod): void {
    const uid = pod.metadata?.uid ?? '';
    const alloc = this.#pods.get(uid);
    if (!alloc || alloc.pod) return;
    const podLevel = podLevelResourcesOf(pod);
    this.#pods.set(uid, { ...alloc, pod: podLevel, actuatedPod: podLevel });
    this.#save();
  }

  /**
   * A pod allocated by a checkpoint written before every init container was resizable: each
   * resizable container the allocation does not hold gets its spec's resources recorded (what it
   * was created with — the apiserver refuses to resize a run-to-completion init container on a
   * node that did not declare InPlacePodVerticalScalingInitContainers), so a later change of them
   * is a resize. Nothing for any other pod.
   */
  adoptContainers(pod: Pod): void {
    const uid = pod.metadata?.uid ?? '';
    const alloc = this.#pods.get(uid);
    if (!alloc) return;
    const missing = resizableContainers(pod).filter((c) => !alloc.containers[c.name]);
    if (!missing.length) return;
    const containers = { ...alloc.containers };
    for (const c of missing) containers[c.name] = resourcesOf(c);
    this.#pods.set(uid, { ...alloc, containers });
    this.#save();
  }

  /**
   * The pod-level resources written to the pod's cgroup (`GetPodLevelResources`); undefined
   * when nothing is recorded (they are the allocated ones).
   */
  actuatedPodLevel(uid: string): Resources | undefined {
    const alloc = this.#pods.get(uid);
    return alloc?.actuatedPod ?? alloc?.pod;
  }

  /**
   * Records that `resource` of `allocated`'s pod-level resources is now in its cgroup (the
   * kubelet's `updateActuatedPodLevelResources` after each resource of `doPodResizeAction`).
   */
  recordActuatedPodLevel(allocated: Pod, resource: 'cpu' | 'memory'): void {
    const uid = allocated.metadata?.uid ?? '';
    const alloc = this.#pods.get(uid);
    if (!alloc) return;
    const want = podLevelResourcesOf(allocated);
    const was = alloc.actuatedPod ?? alloc.pod ?? {};
    const merge = (kind: 'limits' | 'requests') => {
      const out: Record<string, string> = { ...was[kind] };
      if (want[kind]?.[resource] !== undefined) out[resource] = want[kind][resource];
      else delete out[resource];
      return Object.keys(out).length ? { [kind]: out } : {};
    };
    this.#pods.set(uid, { ...alloc, actuatedPod: { ...merge('limits'), ...merge('requests') } });
    this.#save();
  }

  /** Records that a container carrying the legacy hash was recognised with `spec`'s resources (once). */
  recordLegacy(uid: string, spec: Container): void {
    const alloc = this.#pods.get(uid);
    if (!alloc || alloc.legacy?.[spec.name]) return;
    const snapshot = { ...(spec.resources ? { resources: spec.resources } : {}), ...(spec.resizePolicy ? { resizePolicy: spec.resizePolicy } : {}) };
    this.#pods.set(uid, { ...alloc, legacy: { ...alloc.legacy, [spec.name]: snapshot } });
    this.#save();
  }

  removePod(uid: string): void {
    if (this.#pods.delete(uid)) this.#save();
  }

  /** Forgets every pod not in `keep` (`RemoveOrphanedPods`). */
  removeOrphans(keep: ReadonlySet<string>): void {
    let changed = false;
    for (const uid of [...this.#pods.keys()]) {
      if (!keep.has(uid)) changed = this.#pods.delete(uid) || changed;
    }
    if (changed) this.#save();
  }

  /** Resolves once every change so far is on disk. */
  flush(): Promise<void> {
    return this.#writing;
  }

  /**
   * Writes the whole state (a temporary file renamed over the checkpoint). Writes are chained and
   * coalesced: while one waits for the write in flight, further changes join it, and the state is
   * serialised when it starts, so changes made together (or during a write) cost one write, not
   * one each (the kubelet's `storeState` in pkg/kubelet/allocation/state/state_checkpoint.go
   * writes per change, synchronously; the file ends the same). The directory is made before the first write and
   * again after a failed one.
   */
  #save(): void {
    const file = this.#file;
    if (!file || this.#saveQueued) return;
    this.#saveQueued = true;
    this.writes++;
    this.#writing = this.#writing
      .then(async () => {
        this.#saveQueued = false;
        const text = JSON.stringify({ version: 1, pods: Object.fromEntries(this.#pods) } satisfies Checkpoint);
        if (!this.#dirMade) await mkdir(dirname(file), { recursive: true });
        this.#dirMade = true;
        const tmp = `${file}.tmp`;
        await writeFile(tmp, text, { mode: 0o600 });
        await rename(tmp, file);
      })
      .catch((err: unknown) => {
        this.#dirMade = false;
        this.#log?.warn({ err, file }, 'Cannot write the pod allocation checkpoint');
      });
  }
}

/**
 * The resizable containers of a pod (pkg/kubelet/allocation/allocation_manager.go
 * `IsResizableContainer`, InPlacePodVerticalScalingInitContainers on): the regular containers,
 * then every init container, sidecar or not. Ephemeral containers are not.
 */
export function resizableContainers(pod: Pod): Container[] {
  return [...(pod.spec?.containers ?? []), ...(pod.spec?.initContainers ?? [])];
}

/** A container's resources as the allocation keeps them: requests and limits, nothing else. */
function resourcesOf(c: Container): Resources {
  const r = c.resources;
  return { ...(r?.limits ? { limits: { ...(r.limits as Record<string, string>) } } : {}), ...(r?.requests ? { requests: { ...(r.requests as Record<string, string>) } } : {}) };
}

/** The pod-level `spec.resources` as the allocation keeps them; `{}` for a pod without. */
export function podLevelResourcesOf(pod: Pod): Resources {
  const r = pod.spec?.resources;
  return { ...(r?.limits ? { limits: { ...(r.limits as Record<string, string>) } } : {}), ...(r?.requests ? { requests: { ...(r.requests as Record<string, string>) } } : {}) };
}

function allocationOf(pod: Pod): Record<string, Resources> {
  const out: Record<string, Resources> = {};
  for (const c of resizableContainers(pod)) out[c.name] = resourcesOf(c);
  return out;
}

function withAllocation(pod: Pod, alloc: PodAllocation): Pod {
  let changed = false;
  const apply = (c: Container): Container => {
    const a = alloc.containers[c.name];
    if (!a || sameResources(resourcesOf(c), a)) return c;
    changed = true;
    return { ...c, resources: { ...a } };
  };
  const spec = pod.spec;
  if (!spec) return pod;
  const containers = spec.containers.map(apply);
  const initContainers = spec.initContainers?.map(apply);
  // Pod-level resources: the allocated ones (none when `{}`); not recorded: the spec's.
  const podLevel = alloc.pod && !sameResources(podLevelResourcesOf(pod), alloc.pod) ? alloc.pod : undefined;
  if (!changed && !podLevel) return pod;
  const { resources: _spec, ...rest } = spec;
  const resources = podLevel ? (podLevel.limits || podLevel.requests ? { resources: { ...podLevel } } : {}) : spec.resources ? { resources: spec.resources } : {};
  return { ...pod, spec: { ...rest, containers, ...(initContainers ? { initContainers } : {}), ...resources } };
}

/** Whether two resource lists hold the same amounts (`apiequality.Semantic.DeepEqual` of quantities). */
export function sameResourceList(a: Readonly<Record<string, string | number>> | undefined, b: Readonly<Record<string, string | number>> | undefined): boolean {
  const ka = Object.keys(a ?? {});
  const kb = Object.keys(b ?? {});
  if (ka.length !== kb.length) return false;
  return ka.every((k) => b?.[k] !== undefined && quantityOf(a?.[k]) === quantityOf(b[k]));
}

export function sameResources(a: Resources | Container['resources'], b: Resources | Container['resources']): boolean {
  return sameResourceList(a?.limits as Record<string, string> | undefined, b?.limits as Record<string, string> | undefined)
    && sameResourceList(a?.requests as Record<string, string> | undefined, b?.requests as Record<string, string> | undefined);
}
