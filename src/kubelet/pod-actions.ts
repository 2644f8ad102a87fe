import type { Container, Pod } from '../api/types.js';
import { hashContainer } from '../runtime/hash.js';
import type { RuntimeContainer, RuntimePod } from '../runtime/types.js';
import type { Backoff } from './backoff.js';

export interface ContainerStart {
  container: Container;
  /** Attempt and restart count of the new instance. */
  attempt: number;
  /** Why it starts: first start, restart after exit, or spec change. */
  reason: 'new' | 'restart' | 'changed' | 'sandbox';
}

export interface ContainerKill {
  id: string;
  name: string;
  message: string;
}

export interface Waiting {
  reason: string;
  message: string;
}

/** What one sync must do to bring a pod's containers in line with its spec. */
export interface PodActions {
  /** Attempt number of a sandbox to create, or undefined to keep the current one. */
  createSandbox: number | undefined;
  /** Running containers to stop (spec changed, unknown name, sandbox replaced). */
  kill: ContainerKill[];
  /** Containers to start, in spec order, after `kill` and the sandbox. */
  start: ContainerStart[];
  /** Dead containers and sandboxes to remove (garbage beyond the one previous instance kept for logs). */
  remove: string[];
  /** Containers that stay down for now and why (CrashLoopBackOff). */
  waiting: Map<string, Waiting>;
  /** Milliseconds until a back-off ends and the pod must be synced again; undefined when none. */
  resyncAfterMs: number | undefined;
}

export const backoffKey = (pod: Pod, name: string) => `${pod.metadata?.uid}/${name}`;

/**
 * The kubelet's `computePodActions` for Docker (the seed's SyncPod, with the modern rules):
 * a pod needs a ready sandbox; each spec container runs once, and after it exits it is
 * recreated with attempt+1 when the restart policy says so, subject to crash-loop back-off;
 * a running container whose spec hash changed is replaced; unknown containers are killed.
 * The newest dead instance of each container is kept (for `logs --previous`), older ones removed.
 *
 * Pure: it records the restart in `backoff` only for starts it decides on, and reads `now`.
 */
export function computePodActions(pod: Pod, runtime: RuntimePod | undefined, backoff: Backoff, now: number): PodActions {
  const actions: PodActions = { createSandbox: undefined, kill: [], start: [], remove: [], waiting: new Map(), resyncAfterMs: undefined };
  const policy = pod.spec?.restartPolicy ?? 'Always';
  const specs = pod.spec?.containers ?? [];
  const sandboxes = runtime?.sandboxes ?? [];
  const instances = new Map<string, RuntimeContainer[]>();
  for (const c of runtime?.containers ?? []) {
    const list = instances.get(c.name) ?? [];
    list.push(c);
    instances.set(c.name, list);
  }

  const shouldRun = (c: Container): boolean => {
    const newest = instances.get(c.name)?.[0];
    if (!newest || newest.state === 'created') return true;
    if (newest.state === 'running') return true;
    return policy === 'Always' || (policy === 'OnFailure' && newest.exitCode !== 0);
  };

  const current = sandboxes[0];
  const needSandbox = !current?.ready;
  if (needSandbox) {
    // A pod whose containers are all done for good gets no new sandbox (kubelet: "all containers
    // have exited and the restart policy says not to restart them").
    const anyToRun = specs.some((c) => shouldRun(c) && instances.get(c.name)?.[0]?.state !== 'running');
    if (anyToRun || specs.some((c) => instances.get(c.name)?.[0]?.state === 'running')) {
      actions.createSandbox = current ? current.attempt + 1 : 0;
    }
  }
  // Old sandboxes go; the current one too when it is replaced.
  for (const [i, sb] of sandboxes.entries()) {
    if (i > 0 || actions.createSandbox !== undefined) {
      if (sb.ready) actions.kill.push({ id: sb.id, name: 'POD', message: 'Pod sandbox changed, it will be killed and re-created.' });
      actions.remove.push(sb.id);
    }
  }

  for (const c of specs) {
    const list = instances.get(c.name) ?? [];
    const newest = list[0];
    // Older duplicates: keep only the newest dead one besides the current instance.
    for (const [i, old] of list.entries()) {
      if (i === 0) continue;
      if (old.state === 'running') actions.kill.push({ id: old.id, name: c.name, message: 'Duplicate container instance' });
      if (i > 1 || old.state === 'running') actions.remove.push(old.id);
    }
    const nextAttempt = newest ? newest.attempt + 1 : 0;
    const replaceCurrent = (reason: ContainerStart['reason']) => {
      actions.start.push({ container: c, attempt: nextAttempt, reason });
      // The current instance becomes "previous"; the one before it is now garbage.
      const previous = list[1];
      if (previous && previous.state !== 'running' && !actions.remove.includes(previous.id)) actions.remove.push(previous.id);
    };

    if (!newest) {
      if (actions.createSandbox !== undefined || current?.ready) actions.start.push({ container: c, attempt: 0, reason: 'new' });
      continue;
    }
    if (actions.createSandbox !== undefined) {
      if (newest.state === 'running') actions.kill.push({ id: newest.id, name: c.name, message: 'Pod sandbox changed, it will be killed and re-created.' });
      if (shouldRun(c)) replaceCurrent('sandbox');
      continue;
    }
    switch (newest.state) {
      case 'running':
        if (newest.hash && newest.hash !== hashContainer(c)) {
          actions.kill.push({ id: newest.id, name: c.name, message: `Container ${c.name} definition changed, will be restarted` });
          replaceCurrent('changed');
        }
        break;
      case 'created':
      case 'unknown':
        // Created but never started (a failed start): remove it and try again.
        actions.remove.push(newest.id);
        replaceCurrent('restart');
        break;
      case 'exited': {
        if (!shouldRun(c)) break;
        const key = backoffKey(pod, c.name);
        const finished = newest.finishedAt?.getTime() ?? now;
        if (backoff.isInBackOffSince(key, finished, now)) {
          const delay = backoff.delayOf(key);
          actions.waiting.set(c.name, {
            reason: 'CrashLoopBackOff',
            message: `back-off ${formatDelay(delay)} restarting failed container=${c.name} pod=${pod.metadata?.name}_${pod.metadata?.namespace}(${pod.metadata?.uid})`,
          });
          const left = backoff.remaining(key, finished, now);
          actions.resyncAfterMs = Math.min(actions.resyncAfterMs ?? Infinity, left);
          break;
        }
        backoff.next(key, finished, now);
        replaceCurrent('restart');
        break;
      }
    }
  }

  // Containers whose name is not in the spec any more.
  const names = new Set(specs.map((c) => c.name));
  for (const [name, list] of instances) {
    if (names.has(name)) continue;
    for (const c of list) {
      if (c.state === 'running') actions.kill.push({ id: c.id, name, message: `Container ${name} is not in the pod spec any more` });
      actions.remove.push(c.id);
    }
  }
  return actions;
}

function formatDelay(ms: number): string {
  const s = Math.round(ms / 1000);
  return s >= 60 ? `${Math.floor(s / 60)}m${s % 60}s` : `${s}s`;
}
