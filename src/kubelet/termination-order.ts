import type { Pod } from '../api/types.js';
import { isRestartableInit } from '../status/conditions.js';

/**
 * Which containers each container of a pod must see exit before it is sent SIGTERM, when the pod
 * is killed (pkg/kubelet/kuberuntime/kuberuntime_termination_order.go `newTerminationOrdering`):
 * every sidecar (init container with `restartPolicy: Always`) waits for all regular containers,
 * and for the sidecar declared after it, so sidecars stop in reverse order of declaration once
 * the regular containers are gone. Regular and run-to-completion init containers wait for
 * nothing. Only names in `running` are waited for: a container that does not run is as good as
 * exited. Pure.
 */
export function terminationPrerequisites(pod: Pod, running: Iterable<string>): Map<string, string[]> {
  const live = new Set(running);
  const regular = (pod.spec?.containers ?? []).map((c) => c.name).filter((n) => live.has(n));
  const out = new Map<string, string[]>();
  let later: string | undefined;
  for (const c of [...(pod.spec?.initContainers ?? [])].reverse()) {
    if (!isRestartableInit(c)) continue;
    out.set(c.name, [...regular, ...(later !== undefined && live.has(later) ? [later] : [])]);
    later = c.name;
  }
  return out;
}

/**
 * The kubelet's `terminationOrdering` for one kill of a pod's containers: each container's stop
 * waits for its turn (`waitForTurn`, bounded by the grace period it has left) and reports its exit
 * (`containerTerminated`), which lets the containers waiting on it go.
 */
export class TerminationOrdering {
  readonly #prereqs: Map<string, string[]>;
  readonly #exited = new Map<string, { done: Promise<void>; resolve: () => void }>();

  constructor(pod: Pod, running: Iterable<string>) {
    this.#prereqs = terminationPrerequisites(pod, running);
  }

  /**
   * Waits until every container `name` depends on has exited, at most `graceSeconds` (no wait at
   * all when that is 0 or less). Resolves with the seconds waited.
   */
  async waitForTurn(name: string, graceSeconds: number): Promise<number> {
    const prereqs = this.#prereqs.get(name) ?? [];
    if (graceSeconds <= 0 || prereqs.length === 0) return 0;
    const start = Date.now();
    let timer: NodeJS.Timeout | undefined;
    const expired = new Promise<void>((resolve) => (timer = setTimeout(resolve, graceSeconds * 1000)));
    await Promise.race([Promise.all(prereqs.map((p) => this.#entry(p).done)), expired]);
    clearTimeout(timer);
    return (Date.now() - start) / 1000;
  }

  /** The container `name` has exited (or its stop failed: nothing waits on it any longer). */
  containerTerminated(name: string): void {
    this.#entry(name).resolve();
  }

  #entry(name: string): { done: Promise<void>; resolve: () => void } {
    let e = this.#exited.get(name);
    if (!e) {
      let resolve!: () => void;
      const done = new Promise<void>((r) => (resolve = r));
      e = { done, resolve };
      this.#exited.set(name, e);
    }
    return e;
  }
}

/** Whether killing this pod's containers needs an ordering: it has a sidecar. */
export const needsTerminationOrdering = (pod: Pod | undefined): boolean => (pod?.spec?.initContainers ?? []).some(isRestartableInit);
