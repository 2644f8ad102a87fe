import type { Node } from '../api/types.js';
import type { Logger } from '../logging/index.js';
import type { KubeClient } from '../apiserver/client.js';
import { Reflector } from './reflector.js';

export interface NodeWatchOptions {
  client: KubeClient;
  nodeName: string;
  log: Logger;
  /** The node's own Node as the apiserver now holds it (labels, taints), or undefined once deleted. */
  onNode: (node: Node | undefined) => void;
  /** Server-side watch timeout range in seconds (the reflector picks at random in [min, 2·min]). */
  minWatchTimeoutSeconds?: number;
}

/**
 * The kubelet's node informer (pkg/kubelet/kubelet.go `NewMainKubelet`: a reflector over
 * `/api/v1/nodes?fieldSelector=metadata.name=<node>`, the one Node the Node authorizer lets a
 * node get, list and watch). Admission reads its copy (`getNodeAnyWay`), so labels and taints an
 * admin or the node lifecycle controller set through the API apply to the next pod admitted.
 */
export class NodeWatch {
  readonly #reflector: Reflector<Node>;
  readonly #nodeName: string;
  readonly #syncWaiters: (() => void)[] = [];
  #synced = false;

  constructor(opts: NodeWatchOptions) {
    this.#nodeName = opts.nodeName;
    this.#reflector = new Reflector<Node>({
      client: opts.client,
      log: opts.log,
      path: '/api/v1/nodes',
      kind: 'Node',
      fieldSelector: `metadata.name=${opts.nodeName}`,
      keyOf: (node) => node.metadata?.name || undefined,
      onChange: () => {
        const node = this.node;
        if (node && !this.#synced) {
          this.#synced = true;
          for (const w of this.#syncWaiters.splice(0)) w();
        }
        opts.onNode(node);
      },
      ...(opts.minWatchTimeoutSeconds ? { minWatchTimeoutSeconds: opts.minWatchTimeoutSeconds } : {}),
    });
  }

  start(): void {
    this.#reflector.start();
  }

  stop(): Promise<void> {
    return this.#reflector.stop();
  }

  /** The node's Node as the watch last saw it, or undefined. */
  get node(): Node | undefined {
    return this.#reflector.get(this.#nodeName);
  }

  /**
   * Resolves once the Node was first seen (`newNodeHasSyncedFunc`): the kubelet watches its pods
   * only after that (pkg/kubelet/config/apiserver.go `NewSourceApiserver`), so no pod is admitted
   * against a node that lacks the labels the scheduler placed it by.
   */
  synced(): Promise<void> {
    if (this.#synced) return Promise.resolve();
    return new Promise((resolve) => this.#syncWaiters.push(resolve));
  }
}
