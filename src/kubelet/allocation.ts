import { mkdirSync, readFileSync } from 'node:fs';
import { rename, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import type { Container, Pod } from '../api/types.js';
import { isStaticPod } from '../api/annotations.js';
import { computePodQOS } from '../api/qos.js';
import { quantityOf } from '../api/quantity.js';
import { podRequests, resourceFitRefusal } from './resource-fit.js';
import { isRestartableInit } from '../status/conditions.js';

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
}

/** The checkpoint file's name under `--root-dir`, as the kubelet's (pkg/kubelet/allocation/allocation_manager.go). */
export const ALLOCATED_PODS_STATE_FILE = 'allocated_pods_state';

/** The checkpoint's layout (nodelet's own; the kubelet's is a checksummed Go struct). */
interface Checkpoint {
  readonly version: 1;
  readonly pods: Record<string, PodAllocation>;
}

/** The slice of a logger the allocation manager needs. */
export interface AllocationLogger {
  warn(obj: object, msg: string): void;
}

/**
 * The kubelet's allocation manager (pkg/kubelet/allocation/allocation_manager.go): the resources
 * each admitted pod's containers were given — at admission, then at each admitted resize — which
 * is what the node runs them with, whatever the spec asks for meanwhile. Checkpointed to
 * `<rootDir>/allocated_pods_state` on every change, so a restarted nodelet still knows what a
 * pending resize is measured against. Regular containers and sidecars are resizable
 * (`IsResizableContainer`); other init containers keep their spec.
 */
export class AllocationManager {
  readonly #pods = new Map<string, PodAllocation>();
  readonly #file: string | undefined;
  readonly #log: AllocationLogger | undefined;
  #writing: Promise<void> = Promise.resolve();

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
    this.#pods.set(uid, { containers: allocationOf(pod), ...(previous?.legacy ? { legacy: previous.legacy } : {}), pod: podLevel, actuatedPod });
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

  /** Writes the whole state (a temporary file renamed over the checkpoint); writes are chained, the last one wins. */
  #save(): void {
    const file = this.#file;
    if (!file) return;
    const text = JSON.stringify({ version: 1, pods: Object.fromEntries(this.#pods) } satisfies Checkpoint);
    this.#writing = this.#writing
      .then(async () => {
        mkdirSync(dirname(file), { recursive: true });
        const tmp = `${file}.tmp`;
        await writeFile(tmp, text, { mode: 0o600 });
        await rename(tmp, file);
      })
      .catch((err: unknown) => this.#log?.warn({ err, file }, 'Cannot write the pod allocation checkpoint'));
  }
}

function parseCheckpoint(text: string): Record<string, PodAllocation> | undefined {
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
    out[uid] = { containers, ...(legacy ? { legacy } : {}), ...(podLevel ? { pod: podLevel } : {}), ...(actuatedPod ? { actuatedPod } : {}) };
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


/** The resizable containers of a pod (`IsResizableContainer`): regular containers, then sidecars. */
export function resizableContainers(pod: Pod): Container[] {
  return [...(pod.spec?.containers ?? []), ...(pod.spec?.initContainers ?? []).filter(isRestartableInit)];
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
  const initContainers = spec.initContainers?.map((c) => (isRestartableInit(c) ? apply(c) : c));
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

/** The kubelet's pod condition reasons for a resize it cannot (yet) admit (`v1.PodReasonInfeasible`, `PodReasonDeferred`). */
export type PendingReason = 'Infeasible' | 'Deferred';

/** What the allocation manager decides about a pod whose spec asks for other resources than it was allocated. */
export type ResizeDecision =
  | { readonly kind: 'unchanged' }
  | { readonly kind: 'admit' }
  | { readonly kind: 'pending'; readonly reason: PendingReason; readonly message: string };

export interface ResizeDecisionInput {
  /** The pod as its source has it now: the desired resources. */
  readonly desired: Pod;
  /** The same pod with its allocation applied (`UpdatePodFromAllocation`). */
  readonly allocated: Pod;
  /** The other admitted pods still holding resources, each with its allocation applied. */
  readonly others: readonly Pod[];
  /** The node's `status.allocatable`; undefined before it was first built. */
  readonly allocatable: Readonly<Record<string, string>> | undefined;
  /** Why the runtime cannot update a running container's resources; undefined when it can. */
  readonly runtimeRefusal?: string | undefined;
}

/**
 * `handlePodResourcesResize` + `canResizePod` (pkg/kubelet/allocation/allocation_manager.go):
 * `unchanged` when the desired resources are the allocated ones; else `pending` `Infeasible` for
 * a resize nodelet will never apply (a static pod, `IsInPlacePodVerticalScalingAllowed`; what
 * `unsupportedResize` refuses; requests beyond the node's allocatable at all, with the kubelet's
 * "Node didn't have enough capacity" message), `pending` `Deferred` when the new requests do not fit
 * beside the other pods' allocations now (the admission check's message; retried later), else
 * `admit`.
 */
export function resizeDecision(input: ResizeDecisionInput): ResizeDecision {
  const { desired, allocated } = input;
  if (desired === allocated || (sameResources(desired.spec?.resources, allocated.spec?.resources) && resizableContainers(desired).every((c, i) => sameResources(c.resources, resizableContainers(allocated)[i]?.resources)))) {
    return { kind: 'unchanged' };
  }
  if (isStaticPod(desired)) return { kind: 'pending', reason: 'Infeasible', message: 'In-place resize of static-pods is not supported' };
  const unsupported = unsupportedResize(desired, allocated);
  if (unsupported) return { kind: 'pending', reason: 'Infeasible', message: unsupported };
  if (input.runtimeRefusal) return { kind: 'pending', reason: 'Infeasible', message: input.runtimeRefusal };
  const allocatable = input.allocatable;
  if (!allocatable) return { kind: 'pending', reason: 'Deferred', message: 'the node\'s allocatable resources are not known yet' };
  const requests = podRequests(desired);
  const cpuRequests = requests.get('cpu') ?? 0n;
  const memRequests = requests.get('memory') ?? 0n;
  const cpuAvailable = ceilDiv(quantityOf(allocatable.cpu), 1_000_000n);
  const memAvailable = ceilDiv(quantityOf(allocatable.memory), 1_000_000_000n);
  if (cpuRequests > cpuAvailable || memRequests > memAvailable) {
    const what = memRequests > memAvailable ? `memory, requested: ${memRequests}, capacity: ${memAvailable}` : `cpu, requested: ${cpuRequests}, capacity: ${cpuAvailable}`;
    return { kind: 'pending', reason: 'Infeasible', message: `Node didn't have enough capacity: ${what}` };
  }
  const fit = resourceFitRefusal(desired, input.others, allocatable);
  if (fit) return { kind: 'pending', reason: 'Deferred', message: fit.message };
  return { kind: 'admit' };
}

const ceilDiv = (a: bigint, b: bigint) => (a <= 0n ? 0n : (a + b - 1n) / b);

/** The resources an in-place resize may change (the apiserver's `ValidatePodResize` allows no others). */
const RESIZABLE = new Set(['cpu', 'memory']);

/**
 * What nodelet refuses to resize in place, with the reason (`Infeasible`): the apiserver refuses
 * most of it already, but a static pod's manifest or an older apiserver may ask. A changed amount of
 * any resource but cpu and memory (the runtime has no update for it); a limit removed (neither
 * the kubelet — "This does not support removing limits" in `doPodResizeAction` — nor the engine's
 * update, where 0 means "unchanged", can lift one); a change of the pod's QoS class (its cgroup
 * lives under its class). The same for pod-level `spec.resources`. Non-sidecar init containers
 * are not allocated at all: they keep following the spec, as in the kubelet.
 */
export function unsupportedResize(desired: Pod, allocated: Pod): string | undefined {
  const before = new Map(resizableContainers(allocated).map((c) => [c.name, c] as const));
  for (const c of resizableContainers(desired)) {
    const old = before.get(c.name);
    if (!old) continue;
    const refusal = changedResource(c.resources, old.resources);
    if (refusal) return `container ${JSON.stringify(c.name)}: ${refusal}`;
  }
  const pod = changedResource(desired.spec?.resources, allocated.spec?.resources);
  if (pod) return `pod-level ${pod}`;
  if (computePodQOS(desired) !== computePodQOS(allocated)) return 'Pod QOS Class may not change as a result of resizing';
  return undefined;
}

/** Why `now` cannot replace `was` in place: a resource other than cpu and memory changed, or a limit was removed. */
function changedResource(nowResources: Resources | Container['resources'], wasResources: Resources | Container['resources']): string | undefined {
  for (const kind of ['limits', 'requests'] as const) {
    const now = (nowResources?.[kind] ?? {}) as Record<string, string>;
    const was = (wasResources?.[kind] ?? {}) as Record<string, string>;
    for (const name of new Set([...Object.keys(now), ...Object.keys(was)])) {
      if (quantityOf(now[name]) === quantityOf(was[name]) && (now[name] === undefined) === (was[name] === undefined)) continue;
      if (!RESIZABLE.has(name)) return `${kind} of ${name} cannot be resized in place, only cpu and memory`;
      if (kind === 'limits' && now[name] === undefined) return `removing the ${name} limit in place is not supported`;
    }
  }
  return undefined;
}
