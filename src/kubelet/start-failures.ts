import type { Container, Pod } from '../api/types.js';
import { STATUS_MESSAGE_LIMIT, truncateMessage } from '../api/truncate.js';
import { Backoff, backoffKey } from './backoff.js';
import type { RuntimePod } from '../runtime/types.js';
import type { Waiting } from './pod-actions.js';

/** A start held back by its back-off: the waiting reason to show meanwhile and how long is left. */
export interface HeldStart {
  readonly waiting: Waiting;
  readonly leftMs: number;
}

export interface StartFailuresOptions {
  /** Back-off of a container whose start failed (default 10 s doubling to 5 min, as the crash loop's). */
  containerBackoff?: Backoff;
  /**
   * Back-off of a pod whose sandbox creation failed (default 1 s doubling to 10 s, the kubelet's
   * pod worker back-off): a runtime that refuses sandboxes is not asked again on every PLEG event.
   */
  sandboxBackoff?: Backoff;
}

/**
 * The one start-failure memory (the kubelet's `ReasonCache`, pkg/kubelet/reason_cache.go, with
 * the back-off the image manager and the pod worker keep beside it): per container — keyed as the
 * crash-loop back-off, by pod UID, name and spec hash (`backoffKey`, the kubelet's `GetStableKey`),
 * so a changed spec starts afresh — the last failed start's waiting reason and message, and when
 * it failed; per pod the last failed sandbox creation. Each is held until a start (a creation)
 * succeeds or the pod is forgotten, and holds the next attempt back until its back-off ends. The
 * status reads the reasons (a container's waiting reason and message); the sync reads the holds.
 *
 * Apart from the crash-loop back-off (`Kubelet`'s, read by `computePodActions`): that one counts
 * restarts of containers that ran and exited, from their finish time; this one counts starts that
 * left nothing running (an image pull, a config, a create or a sandbox that failed).
 *
 * Messages are cut to `STATUS_MESSAGE_LIMIT`: what is held is re-published at every sync, and it
 * stays small whatever the failure said. Pure: time is passed in.
 */
export class StartFailures {
  readonly #containerBackoff: Backoff;
  readonly #containers = new Map<string, { at: number; waiting: Waiting }>();
  readonly #sandboxBackoff: Backoff;
  readonly #sandboxes = new Map<string, { at: number; waiting: Waiting }>();

  constructor(opts: StartFailuresOptions = {}) {
    this.#containerBackoff = opts.containerBackoff ?? new Backoff();
    this.#sandboxBackoff = opts.sandboxBackoff ?? new Backoff({ initialMs: 1000, maxMs: 10_000 });
  }

  /** A start of `container` failed at `now`: its back-off grows and `failed` is held. Returns the back-off's length. */
  containerFailed(pod: Pod, container: Container, failed: Waiting, now: number): number {
    const key = backoffKey(pod, container);
    this.#containerBackoff.next(key, now, now);
    this.#containers.set(key, { at: now, waiting: bounded(failed) });
    return this.#containerBackoff.remaining(key, now, now);
  }

  /** A start of `container` succeeded: its failure is no longer shown (its back-off stays, as the kubelet's). */
  containerStarted(pod: Pod, container: Container): void {
    this.#containers.delete(backoffKey(pod, container));
  }

  /** The last failed start of `container` (this spec of it), until one succeeds. */
  lastFailure(pod: Pod, container: Container): Waiting | undefined {
    return this.#containers.get(backoffKey(pod, container))?.waiting;
  }

  /**
   * The waiting reasons a status shows (the kubelet's `convertToAPIContainerStatuses` reading the
   * `ReasonCache`): the sync's own (`waiting`: back-offs, holds), and for each other regular
   * container that does not run, its last failed start.
   */
  waiting(pod: Pod, runtimePod: Pick<RuntimePod, 'containers'> | undefined, waiting: ReadonlyMap<string, Waiting>): Map<string, Waiting> {
    const all = new Map(waiting);
    for (const c of pod.spec?.containers ?? []) {
      const failure = this.lastFailure(pod, c);
      if (failure && !all.has(c.name) && !runtimePod?.containers.some((rc) => rc.name === c.name && rc.state === 'running')) {
        all.set(c.name, failure);
      }
    }
    return all;
  }

  /** Whether a start of `container` is held back at `now`: its last failure and how long its back-off has left. */
  containerHeld(pod: Pod, container: Container, now: number): HeldStart | undefined {
    const key = backoffKey(pod, container);
    const failure = this.#containers.get(key);
    if (!failure || !this.#containerBackoff.isInBackOffSince(key, failure.at, now)) return undefined;
    return { waiting: failure.waiting, leftMs: this.#containerBackoff.remaining(key, failure.at, now) };
  }

  /** The sandbox creation of pod `uid` failed at `now`: its back-off grows and `failed` is held. Returns the back-off's length. */
  sandboxFailed(uid: string, failed: Waiting, now: number): number {
    this.#sandboxBackoff.next(uid, now, now);
    this.#sandboxes.set(uid, { at: now, waiting: bounded(failed) });
    return this.#sandboxBackoff.remaining(uid, now, now);
  }

  /** A sandbox of pod `uid` was created: its failure is forgotten. */
  sandboxCreated(uid: string): void {
    this.#sandboxes.delete(uid);
  }

  /** Whether a new sandbox of pod `uid` is held back at `now`: what the containers show meanwhile and how long is left. */
  sandboxHeld(uid: string, now: number): HeldStart | undefined {
    const failure = this.#sandboxes.get(uid);
    if (!failure || !this.#sandboxBackoff.isInBackOffSince(uid, failure.at, now)) return undefined;
    return { waiting: failure.waiting, leftMs: this.#sandboxBackoff.remaining(uid, failure.at, now) };
  }

  /** Forgets everything of pod `uid` (gone, or deleted to be created again): failures and back-offs. */
  forgetPod(uid: string): void {
    this.#containerBackoff.forgetPrefix(`${uid}/`);
    for (const key of this.#containers.keys()) if (key.startsWith(`${uid}/`)) this.#containers.delete(key);
    this.#sandboxBackoff.forget(uid);
    this.#sandboxes.delete(uid);
  }
}

function bounded(failed: Waiting): Waiting {
  return { reason: failed.reason, message: truncateMessage(failed.message, STATUS_MESSAGE_LIMIT) };
}
