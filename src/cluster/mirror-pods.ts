import type { Pod } from 'kubernetes-types/core/v1.js';
import { ConfigHashAnnotationKey, ConfigMirrorAnnotationKey, isStaticPod } from '../api/annotations.js';
import type { Logger } from '../logging/index.js';
import type { PodManager } from '../pod/manager.js';
import { isConflict, isNotFound, type KubeClient } from '../apiserver/client.js';

export interface MirrorPodsOptions {
  client: KubeClient;
  podManager: PodManager;
  nodeName: string;
  /** Resolves once the Node is registered: mirror pods are owned by it. */
  nodeUID: () => Promise<string>;
  /** Called after a mirror pod was created, so the static pod's status is (re)sent to it. */
  onCreated: () => void;
  log: Logger;
  /** Reconcile at least this often even without pod changes (deleted mirrors come back). */
  periodMs?: number;
}

const podsPath = (ns: string) => `/api/v1/namespaces/${encodeURIComponent(ns)}/pods`;

/**
 * Mirror pods, the apiserver's read-only copies of static pods (`pkg/kubelet/pod/mirror_client.go`
 * and the mirror part of `syncPod`): each static pod has one, annotated
 * `kubernetes.io/config.mirror` with the pod's config hash and owned by the Node; a mirror pod
 * that is missing or being deleted is recreated, one whose hash is stale (the manifest changed)
 * is replaced, and one whose static pod is gone is deleted. Runs after every pod change and
 * periodically; one pass at a time.
 */
export class MirrorPods {
  readonly #o: MirrorPodsOptions;
  #running: Promise<void> | undefined;
  #again = false;
  #timer: NodeJS.Timeout | undefined;
  #stopped = false;
  /** Resolves on stop(), so a pass waiting for a Node that never registers can end. */
  readonly #stop: Promise<undefined>;
  #signalStop: () => void = () => undefined;

  constructor(opts: MirrorPodsOptions) {
    this.#o = opts;
    this.#stop = new Promise((resolve) => {
      this.#signalStop = () => resolve(undefined);
    });
  }

  start(): void {
    const tick = () => {
      this.#timer = setTimeout(() => {
        this.reconcile();
        tick();
      }, this.#o.periodMs ?? 10_000);
      this.#timer.unref();
    };
    tick();
    this.reconcile();
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    this.#signalStop();
    clearTimeout(this.#timer);
    await this.#running;
  }

  /** Schedules a pass (coalesced with one already running). */
  reconcile(): void {
    if (this.#stopped) return;
    if (this.#running) {
      this.#again = true;
      return;
    }
    this.#running = (async () => {
      do {
        this.#again = false;
        try {
          await this.#pass();
        } catch (err) {
          this.#o.log.warn({ err }, 'Mirror pod reconciliation failed; retrying');
        }
      } while (this.#again && !this.#stopped);
    })().finally(() => {
      this.#running = undefined;
    });
  }

  async #pass(): Promise<void> {
    const { podManager } = this.#o;
    const nodeUID = await Promise.race([this.#o.nodeUID(), this.#stop]);
    if (nodeUID === undefined) return;
    let created = false;
    for (const pod of podManager.getPods()) {
      if (!isStaticPod(pod) || this.#stopped) continue;
      const mirror = podManager.getMirrorPodByPod(pod);
      const hash = pod.metadata?.annotations?.[ConfigHashAnnotationKey] ?? '';
      if (mirror) {
        const fresh = mirror.metadata?.annotations?.[ConfigMirrorAnnotationKey] === hash && !mirror.metadata?.deletionTimestamp;
        if (fresh) continue;
        this.#o.log.info({ pod: ref(pod) }, 'Mirror pod is stale or being deleted; recreating it');
        await this.#delete(mirror);
      }
      created = (await this.#create(pod, hash, nodeUID)) || created;
    }
    // Mirror pods whose static pod is gone (its manifest was removed).
    for (const mirror of podManager.getMirrorPods()) {
      if (!podManager.getPodByMirrorPod(mirror)) {
        this.#o.log.info({ pod: ref(mirror) }, 'Deleting orphaned mirror pod');
        await this.#delete(mirror);
      }
    }
    if (created) this.#o.onCreated();
  }

  async #create(pod: Pod, hash: string, nodeUID: string): Promise<boolean> {
    const body = mirrorPodOf(pod, hash, this.#o.nodeName, nodeUID);
    try {
      await this.#o.client.request('POST', podsPath(body.metadata?.namespace ?? 'default'), { body });
      this.#o.log.info({ pod: ref(pod) }, 'Created mirror pod');
      return true;
    } catch (err) {
      // Already there (our watch has not caught up): the next pass sees it.
      if (isConflict(err)) return false;
      throw err;
    }
  }

  async #delete(mirror: Pod): Promise<void> {
    const { namespace = 'default', name = '', uid } = mirror.metadata ?? {};
    try {
      await this.#o.client.request('DELETE', `${podsPath(namespace)}/${encodeURIComponent(name)}`, {
        body: { kind: 'DeleteOptions', apiVersion: 'v1', gracePeriodSeconds: 0, ...(uid ? { preconditions: { uid } } : {}) },
      });
    } catch (err) {
      if (!isNotFound(err) && !isConflict(err)) throw err;
    }
  }
}

/**
 * The mirror pod of `pod`: a copy of its metadata and spec, annotated with the config hash, bound
 * to this node and owned (as controller) by the Node object — exactly one owner reference, as
 * NodeRestriction requires. No status: the status sync writes it.
 */
export function mirrorPodOf(pod: Pod, hash: string, nodeName: string, nodeUID: string): Pod {
  const m = pod.metadata ?? {};
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name: m.name ?? '',
      namespace: m.namespace ?? 'default',
      ...(m.labels ? { labels: { ...m.labels } } : {}),
      annotations: { ...m.annotations, [ConfigMirrorAnnotationKey]: hash },
      ownerReferences: [{ apiVersion: 'v1', kind: 'Node', name: nodeName, uid: nodeUID, controller: true }],
    },
    spec: { ...pod.spec, containers: pod.spec?.containers ?? [], nodeName },
  };
}

const ref = (pod: Pod) => `${pod.metadata?.namespace}/${pod.metadata?.name}`;
