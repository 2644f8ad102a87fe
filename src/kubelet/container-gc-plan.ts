/**
 * The container GC's plan, pure (pkg/kubelet/kuberuntime/kuberuntime_gc.go): given the node's
 * runtime pods, the policy and what the kubelet knows of each pod, which dead containers and
 * sandboxes one run removes. The collector that lists, removes and runs on a period is
 * container-gc.ts (pkg/kubelet/container/container_gc.go).
 */
import type { RuntimeContainer, RuntimePod, RuntimeSandbox } from '../runtime/types.js';
import type { ContainerGCPolicy } from './container-gc.js';

/** What the GC asks of the kubelet about a pod (the kuberuntime `podStateProvider`). */
export interface PodStateProvider {
  /**
   * `ShouldPodContentBeRemoved`: nothing of the pod is needed any more — it was evicted, or it is
   * deleted and nothing of it runs, or (once every source is ready) no source knows it.
   */
  shouldPodContentBeRemoved(uid: string): boolean;
  /** `ShouldPodRuntimeBeRemoved`: the pod is terminated (nothing runs and nothing will), or unknown once sources are ready. */
  shouldPodRuntimeBeRemoved(uid: string): boolean;
}

export interface ContainerGCInput {
  /** Every runtime pod of the node, exited containers and dead sandboxes included. */
  readonly pods: readonly RuntimePod[];
  readonly policy: ContainerGCPolicy;
  readonly now: number;
  /** Every pod source has delivered its first snapshot (`SourcesReady.AllReady`). */
  readonly allSourcesReady: boolean;
  /** `DeleteAllUnusedContainers` (the eviction manager's reclaim): terminated pods lose their dead containers too. */
  readonly evictNonDeletedPods: boolean;
  readonly state: PodStateProvider;
}

/** What one GC run removes, by ID: dead containers, then sandboxes (removed in that order). */
export interface ContainerGCPlan {
  readonly containers: string[];
  readonly sandboxes: string[];
}

interface GCInfo {
  readonly id: string;
  readonly attempt: number;
  readonly createdAt: Date;
}

/** Newest first: higher attempt, then later creation (kuberuntime_gc.go `byAttempt`, `sandboxByAttempt`). */
const byAttempt = (a: GCInfo, b: GCInfo) => b.attempt - a.attempt || b.createdAt.getTime() - a.createdAt.getTime();

/**
 * The oldest `toRemove` of `items` (kuberuntime_gc.go `removeOldestN`): sorted newest first, the
 * tail goes. Returns the kept head and the removed tail.
 */
function splitOldest<T extends GCInfo>(items: readonly T[], toRemove: number): { keep: T[]; remove: T[] } {
  const numToKeep = Math.max(0, items.length - toRemove);
  const sorted = [...items].sort(byAttempt);
  return { keep: sorted.slice(0, numToKeep), remove: sorted.slice(numToKeep) };
}

/**
 * One run of the kubelet's container GC, planned (pkg/kubelet/kuberuntime/kuberuntime_gc.go
 * `GarbageCollect`): pure, it returns what to remove.
 *
 * `evictContainers`: the dead (not running) containers created at least `minAgeMs` ago, grouped in
 * evict units per (pod UID, container name). Once all sources are ready, every unit of a pod whose
 * content should be removed (or, with `evictNonDeletedPods`, whose runtime should be) goes entirely.
 * Each remaining unit keeps its newest `maxPerPodContainer`; then, over `maxContainers` in all,
 * each unit keeps an equal share (at least 1), and if still over, the oldest across units go.
 *
 * `evictSandboxes`: a sandbox is active while ready (or running) or while a container that is kept names it;
 * a pod whose content (or runtime) should be removed loses every inactive sandbox, any other pod
 * every inactive sandbox but its newest.
 *
 * One difference: a container `created` but never started that is the newest instance of its name
 * is not a candidate. nodelet creates and starts a container in one step, so the snapshot may show
 * one being started right now; the pod's sync removes and replaces one that failed to start.
 */
export function planContainerGC(input: ContainerGCInput): ContainerGCPlan {
  const { policy, state, evictNonDeletedPods } = input;
  const removePod = (uid: string) => state.shouldPodContentBeRemoved(uid) || (evictNonDeletedPods && state.shouldPodRuntimeBeRemoved(uid));
  const removed: RuntimeContainer[] = [];

  // evictableContainers
  const newestGCTime = input.now - policy.minAgeMs;
  const units = new Map<string, { uid: string; containers: RuntimeContainer[] }>();
  for (const pod of input.pods) {
    const newest = new Map<string, RuntimeContainer>();
    for (const c of [...pod.containers].sort(byAttempt)) if (!newest.has(c.name)) newest.set(c.name, c);
    for (const c of pod.containers) {
      if (c.state === 'running') continue;
      if (c.state === 'created' && newest.get(c.name) === c) continue;
      if (c.createdAt.getTime() > newestGCTime) continue;
      const key = JSON.stringify([pod.uid, c.name]);
      const unit = units.get(key) ?? { uid: pod.uid, containers: [] };
      unit.containers.push(c);
      units.set(key, unit);
    }
  }

  // evictContainers: deleted pods' containers first, once every source is ready.
  if (input.allSourcesReady) {
    for (const [key, unit] of units) {
      if (!removePod(unit.uid)) continue;
      removed.push(...unit.containers);
      units.delete(key);
    }
  }
  const enforcePerUnit = (max: number) => {
    for (const unit of units.values()) {
      const toRemove = unit.containers.length - max;
      if (toRemove <= 0) continue;
      const { keep, remove } = splitOldest(unit.containers, toRemove);
      unit.containers = keep;
      removed.push(...remove);
    }
  };
  if (policy.maxPerPodContainer >= 0) enforcePerUnit(policy.maxPerPodContainer);
  const count = () => [...units.values()].reduce((n, u) => n + u.containers.length, 0);
  if (policy.maxContainers >= 0 && count() > policy.maxContainers) {
    // An equal number per evict unit (min: 1), then the oldest across units.
    enforcePerUnit(Math.max(1, Math.floor(policy.maxContainers / units.size)));
    const numContainers = count();
    if (numContainers > policy.maxContainers) {
      const flattened = [...units.values()].flatMap((u) => u.containers);
      removed.push(...splitOldest(flattened, numContainers - policy.maxContainers).remove);
    }
  }

  // evictSandboxes: against the containers that are kept.
  const gone = new Set(removed.map((c) => c.id));
  const sandboxes: string[] = [];
  for (const pod of input.pods) {
    const kept = pod.containers.filter((c) => !gone.has(c.id));
    // A container that does not say its sandbox (made before the label) keeps all of its pod's.
    const holdsAll = kept.some((c) => c.sandboxId === undefined);
    const held = new Set(kept.map((c) => c.sandboxId));
    const active = (s: RuntimeSandbox) => s.ready || s.running === true || holdsAll || held.has(s.id);
    const toRemove = removePod(pod.uid) ? pod.sandboxes.length : pod.sandboxes.length - 1;
    for (const s of splitOldest(pod.sandboxes, toRemove).remove) if (!active(s)) sandboxes.push(s.id);
  }
  return { containers: removed.map((c) => c.id), sandboxes };
}
