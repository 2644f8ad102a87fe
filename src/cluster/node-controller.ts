import type { Lease } from 'kubernetes-types/coordination/v1.js';
import type { Logger } from '../logging/index.js';
import { isConflict, isNotFound, query, type KubeClient } from '../apiserver/client.js';
import type { Node, NodeStatus } from '../api/types.js';
import { initialNode, nodeLabels, nodeStatus, nodeStatusDiffers, type NodeFacts, type NodeHealth, type NodeSpecOptions } from '../node/object.js';
import { RetryDelay, delay, microTime } from './retry.js';

export interface NodeControllerOptions {
  client: KubeClient;
  nodeName: string;
  /** Read again before every status update (images and runtime version may change). */
  facts: () => Promise<NodeFacts>;
  health: () => NodeHealth;
  spec: NodeSpecOptions;
  /** `--register-node`: create the Node when it does not exist. */
  register: boolean;
  /** How often the status is computed against the apiserver's Node (`nodeStatusUpdateFrequency`, 10 s). */
  updateFrequencyMs: number;
  /** A status the apiserver already holds is still sent this often (`nodeStatusReportFrequency`, 5 min). */
  reportFrequencyMs: number;
  /** `nodeLeaseDurationSeconds` (40); the lease is renewed every quarter of it. */
  leaseDurationSeconds: number;
  /** `Node.spec.podCIDRs` as each status update reads it (the kubelet's `updatePodCIDR`, for the network plugin). */
  podCIDRs?: (cidrs: readonly string[]) => void;
  log: Logger;
}

const nodePath = (name: string) => `/api/v1/nodes/${encodeURIComponent(name)}`;
const leasePath = (name: string) => `/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/${encodeURIComponent(name)}`;
const SMP = 'application/strategic-merge-patch+json' as const;
/** Tries of one status update (the kubelet's `nodeStatusUpdateRetry`). */
const NODE_STATUS_UPDATE_RETRY = 5;

/**
 * Registers the Node, keeps its status current and renews its Lease — the kubelet's
 * `registerWithAPIServer`, `syncNodeStatus` and node lease controller. Each loop retries with
 * back-off on its own and never blocks anything else; `stop()` ends them.
 *
 * Every `updateFrequencyMs` the status is computed from, and compared with, the Node the
 * apiserver holds — not the status last sent — as the kubelet's `tryUpdateNodeStatus` does
 * (pkg/kubelet/kubelet_node_status.go: GET the node, `updateNode` runs the setters on a copy,
 * PATCH when `nodeStatusHasChanged` or `isUpdateStatusPeriodExpired`). So when the node lifecycle
 * controller has set the conditions `Unknown` after a heartbeat gap (and tainted the node
 * unreachable), the next update sends `Ready: True` again within `updateFrequencyMs`, instead of
 * waiting for the report period; an unchanged status is still sent only every
 * `reportFrequencyMs`.
 */
export class NodeController {
  readonly #o: NodeControllerOptions;
  readonly #abort = new AbortController();
  #uid: string | undefined;
  readonly #uidWaiters: ((uid: string) => void)[] = [];
  #lastSentAt = 0;
  /**
   * Whether the apiserver dropped the `declaredFeatures` nodelet sent (one older than 1.35, where
   * NodeStatus has no such field, or with NodeDeclaredFeatures off): then its copy never holds
   * them, and comparing them would send every status as changed.
   */
  #declaredFeaturesDropped = false;
  #loops: Promise<void>[] = [];
  /** Status updates computed (tests read it). */
  checks = 0;
  /** Status updates sent (tests read it). */
  reports = 0;

  constructor(opts: NodeControllerOptions) {
    this.#o = opts;
  }

  /** The Node's UID once registered (mirror pods and the lease are owned by it). */
  get uid(): string | undefined {
    return this.#uid;
  }

  /** Resolves with the Node's UID once it is known. */
  nodeUID(): Promise<string> {
    if (this.#uid !== undefined) return Promise.resolve(this.#uid);
    return new Promise((resolve) => this.#uidWaiters.push(resolve));
  }

  start(): void {
    this.#loops = [this.#statusLoop(), this.#leaseLoop()];
  }

  async stop(): Promise<void> {
    this.#abort.abort();
    await Promise.allSettled(this.#loops);
  }

  /** Sends the status now, whatever changed (tests and shutdown use it). */
  async syncNow(): Promise<void> {
    await this.#syncStatus(true);
  }

  async #statusLoop(): Promise<void> {
    const signal = this.#abort.signal;
    const retry = new RetryDelay({ initialMs: 200, maxMs: 7_000 });
    while (!signal.aborted && this.#uid === undefined) {
      try {
        await this.#registerOrAdopt();
        retry.reset();
      } catch (err) {
        this.#o.log.warn({ err, node: this.#o.nodeName }, 'Unable to register node with the API server');
        await delay(retry.next(), signal);
      }
    }
    let failing = false;
    while (!signal.aborted) {
      await delay(this.#o.updateFrequencyMs, signal);
      if (signal.aborted) break;
      try {
        await this.#syncStatus(false);
        failing = false;
      } catch (err) {
        // One warning per outage; the updates failing after it at debug.
        this.#o.log[failing ? 'debug' : 'warn']({ err, node: this.#o.nodeName }, 'Error updating node status, will retry');
        failing = true;
      }
    }
  }

  async #registerOrAdopt(): Promise<void> {
    const { client, nodeName } = this.#o;
    const facts = await this.#o.facts();
    const now = new Date();
    let node: Node;
    try {
      node = await client.request<Node>('GET', nodePath(nodeName));
      node = await this.#reconcileLabels(node, facts);
    } catch (err) {
      if (!isNotFound(err)) throw err;
      if (!this.#o.register) throw new Error(`node ${nodeName} does not exist and --register-node=false`);
      const fresh = initialNode(facts, this.#o.spec, this.#o.health(), now);
      try {
        node = await client.request<Node>('POST', '/api/v1/nodes', { body: fresh });
        this.#o.log.info({ node: nodeName, uid: node.metadata?.uid }, 'Successfully registered node');
      } catch (createErr) {
        if (!isConflict(createErr)) throw createErr;
        node = await client.request<Node>('GET', nodePath(nodeName));
      }
    }
    this.#setUID(node.metadata?.uid ?? '');
    // A node that existed before may hold an old status: replace it at once.
    await this.#syncStatus(true, node);
  }

  /** The well-known labels follow the host (`updateDefaultLabels`); others are the admin's. */
  async #reconcileLabels(node: Node, facts: NodeFacts): Promise<Node> {
    const want = nodeLabels(facts, { labels: {}, taints: [] });
    const have = node.metadata?.labels ?? {};
    const patch: Record<string, string> = {};
    for (const [k, v] of Object.entries(want)) if (have[k] !== v) patch[k] = v;
    if (Object.keys(patch).length === 0) return node;
    return this.#o.client.request<Node>('PATCH', nodePath(this.#o.nodeName), { body: { metadata: { labels: patch } }, contentType: SMP });
  }

  #setUID(uid: string): void {
    this.#uid = uid;
    for (const w of this.#uidWaiters.splice(0)) w(uid);
  }

  /**
   * One status update, tried up to `nodeStatusUpdateRetry` times (`updateNodeStatus`): the first
   * reads the Node from the apiserver's watch cache (`resourceVersion=0`, what the kubelet's
   * `util.FromApiserverCache` asked for before its node lister took that role), the retries from
   * etcd, as the kubelet's retries do. `known` is a Node just read (registration).
   */
  async #syncStatus(force: boolean, known?: Node): Promise<void> {
    if (this.#uid === undefined) return;
    for (let attempt = 0; ; attempt++) {
      try {
        await this.#tryUpdateStatus(force, attempt === 0 ? known : undefined, attempt === 0);
        return;
      } catch (err) {
        if (attempt + 1 >= NODE_STATUS_UPDATE_RETRY || this.#abort.signal.aborted) throw err;
        this.#o.log.debug({ err, node: this.#o.nodeName, attempt }, 'Error updating node status, will retry');
      }
    }
  }

  /** `tryUpdateNodeStatus`: compute the status over the apiserver's Node, send it if it differs or is due. */
  async #tryUpdateStatus(force: boolean, known: Node | undefined, fromCache: boolean): Promise<void> {
    const { client, nodeName } = this.#o;
    const held = known ?? (await client.request<Node>('GET', `${nodePath(nodeName)}${fromCache ? query({ resourceVersion: '0' }) : ''}`));
    const cidrs = held.spec?.podCIDRs ?? (held.spec?.podCIDR ? [held.spec.podCIDR] : []);
    if (cidrs.length) this.#o.podCIDRs?.(cidrs);
    const status = nodeStatus(await this.#o.facts(), this.#o.health(), held.status, new Date());
    this.checks++;
    const due = Date.now() - this.#lastSentAt >= this.#o.reportFrequencyMs;
    if (!force && !due && !nodeStatusDiffers(held.status, this.#declaredFeaturesDropped ? withoutDeclaredFeatures(status) : status)) return;
    const sent = await client.request<Node>('PATCH', `${nodePath(nodeName)}/status`, { body: { status }, contentType: SMP });
    this.#declaredFeaturesDropped = (status.declaredFeatures?.length ?? 0) > 0 && sent.status?.declaredFeatures === undefined;
    this.#lastSentAt = Date.now();
    this.reports++;
  }

  /**
   * The node lease (component-helpers' lease controller): GET or create, then PUT `renewTime`
   * every `leaseDuration / 4`; on failure retry from 200 ms up to 7 s, re-reading on a conflict.
   */
  async #leaseLoop(): Promise<void> {
    const signal = this.#abort.signal;
    const { nodeName, leaseDurationSeconds } = this.#o;
    const renewEveryMs = (leaseDurationSeconds * 1000) / 4;
    const retry = new RetryDelay({ initialMs: 200, maxMs: 7_000 });
    let lease: Lease | undefined;
    while (!signal.aborted) {
      try {
        lease = await this.#renew(lease);
        retry.reset();
        // client-go jitters the interval by up to 4 %.
        await delay(renewEveryMs * (1 - Math.random() * 0.04), signal);
      } catch (err) {
        if (isConflict(err) || isNotFound(err)) lease = undefined;
        // One warning per outage; the retries after it at debug.
        this.#o.log[retry.failing ? 'debug' : 'warn']({ err, node: nodeName }, 'Failed to update lease');
        await delay(retry.next(), signal);
      }
    }
  }

  async #renew(current: Lease | undefined): Promise<Lease> {
    const { client, nodeName, leaseDurationSeconds } = this.#o;
    const now = microTime(new Date());
    const owner = this.#uid ? [{ apiVersion: 'v1', kind: 'Node', name: nodeName, uid: this.#uid }] : undefined;
    let lease = current;
    if (!lease) {
      try {
        lease = await client.request<Lease>('GET', leasePath(nodeName));
      } catch (err) {
        if (!isNotFound(err)) throw err;
        return client.request<Lease>('POST', '/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases', {
          body: {
            apiVersion: 'coordination.k8s.io/v1',
            kind: 'Lease',
            metadata: { name: nodeName, namespace: 'kube-node-lease', ...(owner ? { ownerReferences: owner } : {}) },
            spec: { holderIdentity: nodeName, leaseDurationSeconds, renewTime: now },
          },
        });
      }
    }
    const hasOwner = (lease.metadata?.ownerReferences ?? []).some((r) => r.kind === 'Node' && r.uid === this.#uid);
    const next: Lease = {
      ...lease,
      metadata: { ...lease.metadata, ...(owner && !hasOwner ? { ownerReferences: owner } : {}) },
      spec: { ...lease.spec, holderIdentity: nodeName, leaseDurationSeconds, renewTime: now },
    };
    return client.request<Lease>('PUT', leasePath(nodeName), { body: next });
  }
}

function withoutDeclaredFeatures(status: NodeStatus): NodeStatus {
  const { declaredFeatures: _d, ...rest } = status;
  return rest;
}
