import type Docker from 'dockerode';

/** One container's last inspection. */
export interface CachedInspect {
  /** The state the container list showed when the inspection was asked for. */
  readonly listedState: string;
  /** The state the inspection itself answered (`State.Status`). */
  readonly status: string;
  readonly info: Docker.ContainerInspectInfo;
  /** An exited container's termination message, read once with the inspection. */
  readonly terminationMessage?: string;
  /** When the inspection was asked for, on the cache's clock (`InspectCache.next`). */
  readonly seq: number;
}

/**
 * Docker event actions that never make an earlier inspection wrong, so they need no new one:
 * - `create`: the container is new; no inspection of it can predate the event.
 * - `start`: dockerd records the container running in the view its list reads before it
 *   logs the event (daemon/start.go: `CheckpointTo(containersReplica)`, then
 *   `LogContainerEvent(…, "start")`), so the listing after the event already shows `running`
 *   and a cached `created` or `exited` inspection no longer matches it.
 * - `kill`, `stop`: the state changes only with the `die` that reports the exit (`kill` with a
 *   signal the process survives changes nothing; `stop` follows the `die`).
 * - `exec_*`, `attach`, `resize`, `top`, `export`, `archive-path`, `extract-to-dir`,
 *   `health_status`: they do not touch the container's state (probes exec every period).
 * Every other action (`die`, `oom`, `pause`, `update`, `rename`, unknown ones) makes the next
 * listing inspect the container again whatever state the list shows: the list lags `die`
 * (dockerd logs the event before it stores the exited state, daemon/monitor.go).
 * The kubelet does the same with its relist (pkg/kubelet/pleg/generic.go): a container is
 * inspected again when its state changed, not once per event.
 */
const NO_NEWS = new Set(['create', 'start', 'kill', 'stop', 'attach', 'resize', 'top', 'export', 'archive-path', 'extract-to-dir', 'health_status']);

/** The action of an event without its detail (`exec_create: sh -c …`, `health_status: healthy`). */
function baseAction(action: string): string {
  const colon = action.indexOf(':');
  return (colon < 0 ? action : action.slice(0, colon)).trim();
}

/** Whether an event of this action may make a container's cached inspection wrong. */
export function eventInvalidatesInspect(action: string): boolean {
  const base = baseAction(action);
  return !(NO_NEWS.has(base) || base.startsWith('exec_'));
}

/**
 * Whether an event of this action is worth a relist now: those that need a new inspection, and
 * `create` and `start` (a container appears, a container runs). Not `kill` (the `die` that
 * follows, if any, relists) or `stop` (it follows the `die`), nor those that leave the container
 * as it was (exec, attach, …). The periodic relist covers them all anyway.
 */
export function eventChangesStatus(action: string): boolean {
  const base = baseAction(action);
  return eventInvalidatesInspect(action) || base === 'create' || base === 'start';
}

/**
 * The inspections a relist may reuse, on one logical clock: every inspection asked for and every
 * event that may change its answer takes the next tick. A cached inspection answers for a listing
 * while the list shows the state it was asked at or the state it answered, and no event newer
 * than the question names the container: an inspection asked before an event is re-asked, one
 * asked after it is not (whatever order the answers and events arrive in).
 */
export class InspectCache {
  #clock = 0;
  readonly #entries = new Map<string, CachedInspect>();
  /** Container → the tick of the last event that may have changed its inspection. */
  readonly #changedAt = new Map<string, number>();
  /** Names of the containers nodelet is creating and starting now (`startingNow`). */
  readonly #starting = new Set<string>();

  /** The tick of an inspection (or a listing) about to be asked for. */
  next(): number {
    return ++this.#clock;
  }

  /** An event (or nodelet's own change) that may make the container's inspection wrong. */
  changed(id: string): void {
    this.#changedAt.set(id, ++this.#clock);
  }

  /** Whether an inspection asked at `seq` is newer than every change of the container. */
  current(id: string, seq: number): boolean {
    return (this.#changedAt.get(id) ?? 0) < seq;
  }

  /** The cached inspection if it still tells what a new one would, for a container the list shows in `listedState`. */
  fresh(id: string, listedState: string): CachedInspect | undefined {
    const entry = this.#entries.get(id);
    // A restarting container's state moves on its own, without an event nodelet waits for.
    if (!entry || listedState === 'restarting') return undefined;
    if (entry.listedState !== listedState && entry.status !== listedState) return undefined;
    return this.current(id, entry.seq) ? entry : undefined;
  }

  /** The last inspection, fresh or not (for a container whose inspection is slow now). */
  last(id: string): CachedInspect | undefined {
    return this.#entries.get(id);
  }

  /** Keeps an inspection unless one asked later is cached already. */
  remember(id: string, entry: CachedInspect): void {
    const held = this.#entries.get(id);
    if (!held || held.seq < entry.seq) this.#entries.set(id, entry);
  }

  /** Forgets a container's inspection (removed, or its answer no longer trusted). */
  forget(id: string): void {
    this.#entries.delete(id);
  }

  /**
   * After a listing that began at tick `listedAt`: forgets the containers it did not show, except
   * those remembered or changed after it began (created since, so the list could not show them).
   */
  retain(listed: ReadonlySet<string>, listedAt: number): void {
    for (const [id, entry] of this.#entries) if (!listed.has(id) && entry.seq < listedAt) this.#entries.delete(id);
    for (const [id, at] of this.#changedAt) if (!listed.has(id) && at < listedAt) this.#changedAt.delete(id);
  }

  /**
   * Marks a container (by its name: the engine gives the ID only once the create answers) that
   * nodelet is creating and starting now: until `started`, a listing that shows it `created`
   * reports it from the list. Its inspection would wait for the engine's lock on the container
   * until the start ends, and could only answer `created` or what the start returns to nodelet
   * anyway; the listing after the start inspects it.
   */
  startingNow(name: string): void {
    this.#starting.add(name);
  }

  started(name: string): void {
    this.#starting.delete(name);
  }

  isStarting(name: string): boolean {
    return this.#starting.has(name);
  }

  /**
   * Whether an event of container `name` asks for a relist now: one that changes its status
   * (`eventChangesStatus`), except the `create` and `start` of a container nodelet is creating
   * or starting itself — its sync relists once it is done (src/kubelet/kubelet.ts `#sync`), and
   * a relist for each would spend the PLEG's banked relists (pleg.ts `RELIST_BURST`) on states
   * the sync is about to change, leaving the one after it to wait out a gap.
   */
  asksForRelist(action: string, name: string): boolean {
    if (!eventChangesStatus(action)) return false;
    const base = baseAction(action);
    return !((base === 'create' || base === 'start') && this.#starting.has(name));
  }
}
