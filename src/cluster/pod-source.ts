import type { Pod } from 'kubernetes-types/core/v1.js';
import { ConfigSourceAnnotationKey } from '../api/annotations.js';
import type { Logger } from '../logging/index.js';
import type { KubeClient } from '../apiserver/client.js';
import { Reflector } from './reflector.js';

export interface ApiPodSourceOptions {
  client: KubeClient;
  nodeName: string;
  log: Logger;
  /** The complete set of this node's pods, after the first list and after every change. */
  onPods: (pods: Pod[]) => void;
  /** Server-side watch timeout range in seconds (the reflector picks at random in [min, 2·min]). */
  minWatchTimeoutSeconds?: number;
}

/**
 * The kubelet's apiserver pod source (`NewSourceApiserver`): a reflector (src/cluster/reflector.ts)
 * over `/api/v1/pods?fieldSelector=spec.nodeName=<node>` — the only pod list the Node authorizer
 * allows a node — handing the complete set to `onPods` after the first list and every change.
 */
export class ApiPodSource {
  readonly #reflector: Reflector<Pod>;

  constructor(opts: ApiPodSourceOptions) {
    this.#reflector = new Reflector<Pod>({
      client: opts.client,
      log: opts.log,
      path: '/api/v1/pods',
      kind: 'Pod',
      fieldSelector: `spec.nodeName=${opts.nodeName}`,
      keyOf: (pod) => pod.metadata?.uid || undefined,
      // Annotated once, when it arrives: an unchanged pod is the same object in every snapshot, so
      // `PodConfig.update` skips it by identity.
      transform: withSourceAnnotation,
      onChange: opts.onPods,
      ...(opts.minWatchTimeoutSeconds ? { minWatchTimeoutSeconds: opts.minWatchTimeoutSeconds } : {}),
    });
  }

  start(): void {
    this.#reflector.start();
  }

  stop(): Promise<void> {
    return this.#reflector.stop();
  }

  /** The apiserver's pod with this UID as the watch last saw it (the informer's cache), or undefined. */
  get(uid: string): Pod | undefined {
    return this.#reflector.get(uid);
  }

  /** Lists done (tests and metrics read it). */
  get lists(): number {
    return this.#reflector.lists;
  }
}

/** Pods from the apiserver carry `kubernetes.io/config.source: api`, as the kubelet's config adds. */
function withSourceAnnotation(pod: Pod): Pod {
  return { ...pod, metadata: { ...pod.metadata, annotations: { ...pod.metadata?.annotations, [ConfigSourceAnnotationKey]: 'api' } } };
}
