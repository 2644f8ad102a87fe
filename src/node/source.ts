import { createHash } from 'node:crypto';
import { uptime } from 'node:os';
import type { Node, NodeStatus } from '../api/types.js';
import { rfc3339 } from '../api/time.js';
import { initialNode, nodeStatus, nodeStatusChanged, type NodeFacts, type NodeHealth, type NodeSpecOptions } from './object.js';

/** What the PLEG reports about its relists (`PLEG.health()`). */
export interface RelistHealth {
  readonly relists: number;
  readonly lastSuccess: number;
  readonly lastError: string | undefined;
}

/** The runtime counts as down when the PLEG has not relisted for this long (the kubelet's PLEG threshold is 3 min; nodelet relists every second, every 10 s while the engine's event stream is up). */
export const RUNTIME_STALE_MS = 30_000;

/** The runtime's `NetworkReady` condition (network/types.ts `NetworkReadiness`). */
export type NetworkHealth = { readonly ready: true } | { readonly ready: false; readonly reason: string; readonly message: string };

/**
 * The node's health from the PLEG and the pod network: NotReady when the container runtime has
 * not been listed for `RUNTIME_STALE_MS` (or never), else when its network is not ready, with the
 * kubelet's messages (pkg/kubelet/runtime.go `runtimeErrors`, `networkErrors`). The pressure
 * conditions are the eviction manager's (`pressure`: the conditions it observes now).
 */
export function healthFromRelist(h: RelistHealth, nowMs: number = Date.now(), network: NetworkHealth = { ready: true }, pressure: ReadonlySet<string> = new Set()): NodeHealth {
  const stale = h.relists === 0 || nowMs - h.lastSuccess > RUNTIME_STALE_MS;
  const notReadyReason = stale
    ? `container runtime is down: ${h.lastError ?? 'not listed yet'}`
    : !network.ready
      ? `container runtime network not ready: NetworkReady=false reason:${network.reason} message:docker: network plugin is not ready: ${network.message}`
      : undefined;
  return {
    ...(notReadyReason !== undefined ? { notReadyReason } : {}),
    memoryPressure: pressure.has('MemoryPressure'),
    diskPressure: pressure.has('DiskPressure'),
    pidPressure: pressure.has('PIDPressure'),
  };
}

/** A stable UID for the node: the same machine and node name give the same UID across restarts. */
export function nodeUID(machineID: string, nodeName: string): string {
  const h = createHash('sha256').update(`nodelet-node\0${machineID}\0${nodeName}`).digest('hex');
  // Version 4 / variant 1 layout, so it reads like any apiserver UID.
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-4${h.slice(13, 16)}-${((parseInt(h.slice(16, 17), 16) & 3) | 8).toString(16)}${h.slice(17, 20)}-${h.slice(20, 32)}`;
}

export interface NodeSourceOptions {
  /** Reads the host and the container engine (`readNodeFacts`). */
  readFacts: () => Promise<NodeFacts>;
  /** The node's health now (`healthFromRelist` over the PLEG). */
  health: () => NodeHealth;
  spec: NodeSpecOptions;
  /** Facts are reused for this long (default 5 s): a burst of `kubectl get nodes` reads Docker once. */
  factsTtlMs?: number;
  /** While started, the node is rebuilt this often so watchers see changes (default 10 s, `nodeStatusUpdateFrequency`). */
  refreshMs?: number;
  /** The registered Node's UID, once cluster mode knows it (the apiserver's, not ours). */
  registeredUID?: () => string | undefined;
  /** When the node came up (default: the host's boot time): the Node's `creationTimestamp`. */
  createdAt?: Date;
  log?: { warn(obj: object, msg: string): void };
}

/**
 * The one source of this node's Node object, for the local `/api/v1/nodes` routes and for cluster
 * mode's registration and status updates alike: facts cached for a few seconds (a single read in
 * flight at a time), health from the PLEG, the object built by `initialNode`/`nodeStatus`, and
 * conditions' transition times carried from one build to the next. Listeners hear of every build
 * that changed something besides heartbeat times.
 */
export class NodeSource {
  readonly #o: NodeSourceOptions;
  readonly #ttl: number;
  readonly #createdAt: string;
  #facts: { value: NodeFacts; at: number } | undefined;
  #reading: Promise<NodeFacts> | undefined;
  #last: Node | undefined;
  readonly #listeners = new Set<(node: Node) => void>();
  #timer: NodeJS.Timeout | undefined;

  constructor(opts: NodeSourceOptions) {
    this.#o = opts;
    this.#ttl = opts.factsTtlMs ?? 5000;
    const created = opts.createdAt ?? new Date(Math.floor((Date.now() - uptime() * 1000) / 1000) * 1000);
    this.#createdAt = rfc3339(created);
  }

  /** The host's facts, read at most once per `factsTtlMs`. Rejects when the engine cannot be read and nothing is cached. */
  async facts(): Promise<NodeFacts> {
    const cached = this.#facts;
    if (cached && Date.now() - cached.at < this.#ttl) return cached.value;
    if (!this.#reading) {
      this.#reading = this.#o
        .readFacts()
        .then((value) => {
          this.#facts = { value, at: Date.now() };
          return value;
        })
        .finally(() => {
          this.#reading = undefined;
        });
    }
    try {
      return await this.#reading;
    } catch (err) {
      // A stale answer beats none while Docker is briefly unreachable; health says NotReady anyway.
      if (cached) return cached.value;
      throw err;
    }
  }

  health(): NodeHealth {
    return this.#o.health();
  }

  /** The newest Node built, if any (no I/O). */
  get last(): Node | undefined {
    return this.#last;
  }

  /** The Node as it is now. */
  async node(): Promise<Node> {
    const facts = await this.facts();
    const now = new Date();
    const base = initialNode(facts, this.#o.spec, this.health(), now);
    const status: NodeStatus = nodeStatus(facts, this.health(), this.#last?.status, now);
    const node: Node = {
      ...base,
      metadata: {
        ...base.metadata,
        name: facts.nodeName,
        uid: this.#o.registeredUID?.() ?? nodeUID(facts.machineID, facts.nodeName),
        creationTimestamp: this.#createdAt,
      },
      status,
    };
    const previous = this.#last;
    this.#last = node;
    if (!previous || nodeChanged(previous, node)) for (const l of this.#listeners) l(node);
    return node;
  }

  /** Called with the Node after each build that changed more than heartbeat times. Returns the unsubscribe function. */
  onChange(listener: (node: Node) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** Rebuilds the node every `refreshMs` (and now), so watchers hear of changes without anyone asking. */
  start(): void {
    if (this.#timer) return;
    const tick = () => {
      this.node().catch((err: unknown) => this.#o.log?.warn({ err }, 'Unable to read node facts'));
    };
    tick();
    this.#timer = setInterval(tick, this.#o.refreshMs ?? 10_000);
    this.#timer.unref();
  }

  stop(): void {
    if (this.#timer) clearInterval(this.#timer);
    this.#timer = undefined;
  }
}

/** Whether `next` says something `prev` did not, ignoring heartbeat times. */
export function nodeChanged(prev: Node, next: Node): boolean {
  if (JSON.stringify(prev.metadata) !== JSON.stringify(next.metadata) || JSON.stringify(prev.spec) !== JSON.stringify(next.spec)) return true;
  return next.status !== undefined && nodeStatusChanged(prev.status, next.status);
}
