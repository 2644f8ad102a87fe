import type { Container, Pod, Probe } from 'kubernetes-types/core/v1.js';
import type { RuntimePod } from '../../runtime/types.js';
import { runProbe, unsupportedProbe, type ProbeIO, type ProbeOutcome } from './handlers.js';
import { isRestartableInit } from '../../status/conditions.js';

export type ProbeKind = 'liveness' | 'readiness' | 'startup';

/** Cancels a scheduled call. */
export type Cancel = () => void;
/** `setTimeout` without keeping the process alive; injectable so tests drive time by hand. */
export type Schedule = (fn: () => void, ms: number) => Cancel;

const realSchedule: Schedule = (fn, ms) => {
  const timer = setTimeout(fn, ms);
  timer.unref();
  return () => clearTimeout(timer);
};

export interface ProberOptions {
  /** How probes of one container instance reach it. */
  io: (pod: Pod, containerId: string, sandboxId: string) => ProbeIO;
  /** A probe result changed: the pod must be synced (status, or a restart for liveness). */
  onChange: (podUID: string) => void;
  /** Every failed attempt, for the `Unhealthy` event ("Liveness probe failed: …"). */
  onFailure: (pod: Pod, container: string, kind: ProbeKind, output: string) => void;
  /** A success with a warning (an HTTP redirect not followed), for the `ProbeWarning` event. */
  onWarning?: (pod: Pod, container: string, kind: ProbeKind, warning: string) => void;
  schedule?: Schedule;
  now?: () => number;
}

/** The kubelet's probe `results.Result` per worker: what the sync loop acts on. */
type Result = 'success' | 'failure' | 'unknown';

interface Worker {
  readonly podUID: string;
  readonly container: string;
  readonly containerId: string;
  readonly kind: ProbeKind;
  readonly probe: Probe;
  result: Result;
  /** Consecutive attempts with the same outcome. */
  streak: { outcome: 'success' | 'failure'; count: number } | undefined;
  /** Liveness/startup failed: no more probing until the container is replaced. */
  onHold: boolean;
  cancel: Cancel | undefined;
  /** One probing round (then the next is scheduled); set when the worker starts. */
  tick: () => void;
  running: boolean;
  stopped: boolean;
}

const key = (uid: string, container: string, kind: ProbeKind) => `${uid}/${container}/${kind}`;

/**
 * The kubelet's prober manager: one worker per (container instance, probe kind), each running its
 * probe every `periodSeconds` after `initialDelaySeconds`, turning `successThreshold` /
 * `failureThreshold` consecutive outcomes into a result. A startup probe holds the other two back
 * until it succeeds. Liveness and startup workers stop after a failure (the container is about
 * to be restarted); a new container instance gets fresh workers. Results start as the kubelet's
 * do: readiness failure (not ready), liveness success, startup unknown.
 */
export class ProberManager {
  readonly #o: ProberOptions;
  readonly #schedule: Schedule;
  readonly #now: () => number;
  readonly #workers = new Map<string, Worker>();

  constructor(opts: ProberOptions) {
    this.#o = opts;
    this.#schedule = opts.schedule ?? realSchedule;
    this.#now = opts.now ?? Date.now;
  }

  /**
   * Makes the workers match the pod's running containers: a worker for each probe of each
   * running container instance, none for anything else.
   */
  syncPod(pod: Pod, runtimePod: RuntimePod | undefined): void {
    const uid = pod.metadata?.uid ?? '';
    const sandbox = runtimePod?.sandboxes.find((s) => s.ready);
    const wanted = new Set<string>();
    if (sandbox && !pod.metadata?.deletionTimestamp) {
      for (const c of [...(pod.spec?.containers ?? []), ...(pod.spec?.initContainers ?? []).filter(isRestartableInit)]) {
        const instance = runtimePod?.containers.find((rc) => rc.name === c.name && rc.state === 'running');
        if (!instance) continue;
        for (const [kind, probe] of probesOf(c)) {
          if (unsupportedProbe(probe)) continue;
          const k = key(uid, c.name, kind);
          wanted.add(k);
          const existing = this.#workers.get(k);
          if (existing?.containerId === instance.id) continue;
          if (existing) this.#stopWorker(existing);
          this.#startWorker(pod, c, kind, probe, instance.id, sandbox.id, instance.startedAt?.getTime() ?? this.#now());
        }
      }
    }
    for (const [k, w] of this.#workers) if (w.podUID === uid && !wanted.has(k)) this.#remove(k, w);
  }

  removePod(uid: string): void {
    for (const [k, w] of this.#workers) if (w.podUID === uid) this.#remove(k, w);
  }

  stop(): void {
    for (const [k, w] of this.#workers) this.#remove(k, w);
  }

  /**
   * Readiness of a running container instance: undefined without a readiness probe (ready once
   * started: the caller gates it on `isStarted`, as `UpdatePodStatus` in
   * pkg/kubelet/prober/prober_manager.go does), else whether it has passed. A container with a
   * startup probe and no readiness probe is ready as soon as the startup probe passed.
   */
  isReady(uid: string, container: string, containerId: string): boolean | undefined {
    const w = this.#workers.get(key(uid, container, 'readiness'));
    if (!w || w.containerId !== containerId) return undefined;
    return w.result === 'success';
  }

  /** Whether the startup probe passed: undefined without one. */
  isStarted(uid: string, container: string, containerId: string): boolean | undefined {
    const w = this.#workers.get(key(uid, container, 'startup'));
    if (!w || w.containerId !== containerId) return undefined;
    return w.result === 'success';
  }

  /** Which probe (liveness or startup) says this container instance must be restarted, if any. */
  failed(uid: string, container: string, containerId: string): 'liveness' | 'startup' | undefined {
    for (const kind of ['startup', 'liveness'] as const) {
      const w = this.#workers.get(key(uid, container, kind));
      if (w && w.containerId === containerId && w.result === 'failure') return kind;
    }
    return undefined;
  }

  /** Workers running (tests and metrics read it). */
  get size(): number {
    return this.#workers.size;
  }

  #startWorker(pod: Pod, container: Container, kind: ProbeKind, probe: Probe, containerId: string, sandboxId: string, startedAt: number): void {
    const uid = pod.metadata?.uid ?? '';
    const w: Worker = {
      podUID: uid,
      container: container.name,
      containerId,
      kind,
      probe,
      result: kind === 'readiness' ? 'failure' : kind === 'liveness' ? 'success' : 'unknown',
      streak: undefined,
      onHold: false,
      cancel: undefined,
      tick: () => undefined,
      running: false,
      stopped: false,
    };
    this.#workers.set(key(uid, container.name, kind), w);
    const io = this.#o.io(pod, containerId, sandboxId);
    const period = Math.max(1, probe.periodSeconds ?? 10) * 1000;
    const initialDelay = Math.max(0, probe.initialDelaySeconds ?? 0) * 1000;
    const tick = async (): Promise<void> => {
      w.cancel = undefined;
      if (w.stopped || w.onHold) return;
      // A startup probe holds liveness and readiness back until it succeeds.
      const startup = kind !== 'startup' ? this.#workers.get(key(uid, container.name, 'startup')) : undefined;
      if (!startup || startup.containerId !== containerId || startup.result === 'success') {
        w.running = true;
        const outcome = await runProbe(probe, container.ports ?? [], io);
        w.running = false;
        if (w.stopped) return;
        this.#record(pod, w, outcome);
      }
      if (!w.stopped && !w.onHold) w.cancel = this.#schedule(w.tick, period);
    };
    w.tick = () => void tick();
    const wait = Math.max(0, startedAt + initialDelay - this.#now());
    w.cancel = this.#schedule(w.tick, wait);
  }

  #record(pod: Pod, w: Worker, outcome: ProbeOutcome): void {
    w.streak = w.streak?.outcome === outcome.result ? { outcome: outcome.result, count: w.streak.count + 1 } : { outcome: outcome.result, count: 1 };
    if (outcome.result === 'failure') this.#o.onFailure(pod, w.container, w.kind, outcome.output);
    if (outcome.warning !== undefined) this.#o.onWarning?.(pod, w.container, w.kind, outcome.warning);
    const threshold = outcome.result === 'success' ? Math.max(1, w.probe.successThreshold ?? 1) : Math.max(1, w.probe.failureThreshold ?? 3);
    if (w.streak.count < threshold || w.result === outcome.result) return;
    w.result = outcome.result;
    // A failed liveness or startup probe restarts the container: stop probing this instance.
    if (outcome.result === 'failure' && w.kind !== 'readiness') w.onHold = true;
    // A passed startup probe stays passed for this instance.
    if (outcome.result === 'success' && w.kind === 'startup') {
      w.onHold = true;
      this.#kickOthers(w);
    }
    this.#o.onChange(w.podUID);
  }

  /** After a startup probe passes, the held-back probes run at once rather than a period later. */
  #kickOthers(startup: Worker): void {
    for (const kind of ['liveness', 'readiness'] as const) {
      const w = this.#workers.get(key(startup.podUID, startup.container, kind));
      if (!w || w.containerId !== startup.containerId || w.running || !w.cancel) continue;
      w.cancel();
      w.cancel = this.#schedule(w.tick, 0);
    }
  }

  #stopWorker(w: Worker): void {
    w.stopped = true;
    w.cancel?.();
  }

  #remove(k: string, w: Worker): void {
    this.#stopWorker(w);
    this.#workers.delete(k);
  }
}

function probesOf(c: Container): [ProbeKind, Probe][] {
  const out: [ProbeKind, Probe][] = [];
  if (c.startupProbe) out.push(['startup', c.startupProbe]);
  if (c.livenessProbe) out.push(['liveness', c.livenessProbe]);
  if (c.readinessProbe) out.push(['readiness', c.readinessProbe]);
  return out;
}
