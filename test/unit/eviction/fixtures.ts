// Pods and usage for the eviction unit tests (not a test file itself: tap runs *.test.ts only).
import type { Container, Pod } from '../../../src/api/types.js';
import type { PodUsage } from '../../../src/eviction/types.js';

export const Ki = 1024n;
export const Mi = 1024n * Ki;
export const Gi = 1024n * Mi;

type Resources = Readonly<Record<string, string>>;

export interface PodOptions {
  readonly priority?: number;
  readonly requests?: Resources;
  readonly limits?: Resources;
  readonly containers?: Container[];
  readonly initContainers?: Container[];
  readonly volumes?: NonNullable<Pod['spec']>['volumes'];
  readonly annotations?: Record<string, string>;
  readonly terminationGracePeriodSeconds?: number;
  readonly podResources?: NonNullable<Pod['spec']>['resources'];
  readonly overhead?: Resources;
  readonly tolerations?: NonNullable<Pod['spec']>['tolerations'];
}

/** A pod named `name` (uid `uid-<name>`) with one container `c` carrying `requests`/`limits`, unless `containers` is given. */
export function pod(name: string, o: PodOptions = {}): Pod {
  const containers = o.containers ?? [{ name: 'c', image: 'img', resources: { requests: o.requests, limits: o.limits } }];
  return {
    metadata: { name, namespace: 'ns', uid: `uid-${name}`, annotations: o.annotations },
    spec: {
      containers,
      initContainers: o.initContainers,
      priority: o.priority,
      volumes: o.volumes,
      terminationGracePeriodSeconds: o.terminationGracePeriodSeconds,
      resources: o.podResources,
      overhead: o.overhead,
      tolerations: o.tolerations,
    },
  };
}

export function usageOf(entries: [Pod, PodUsage][]): Map<string, PodUsage> {
  return new Map(entries.map(([p, u]) => [p.metadata?.uid ?? '', u]));
}

export const names = (pods: readonly Pod[]): string[] => pods.map((p) => p.metadata?.name ?? '');
