import type { Pod, PodList } from 'kubernetes-types/core/v1.js';
import { ConfigSourceAnnotationKey } from '../api/annotations.js';
import type { Logger } from '../logging/index.js';
import { isGone, query, type KubeClient, type WatchEvent } from '../apiserver/client.js';
import { RetryDelay, delay } from './retry.js';

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
 * The kubelet's apiserver pod source (`NewSourceApiserver`): a reflector over
 * `/api/v1/pods?fieldSelector=spec.nodeName=<node>` — the only pod list the Node authorizer
 * allows a node. List, then watch from the list's resourceVersion with bookmarks; a watch that
 * ends is resumed from the last version seen, a 410 (version too old) relists, any other failure
 * retries with back-off, and a watch silent past its own timeout is abandoned as stalled. Because
 * every relist replaces the whole set, an add, update or delete that happened while the apiserver
 * was unreachable is never lost.
 */
export class ApiPodSource {
  readonly #o: ApiPodSourceOptions;
  readonly #abort = new AbortController();
  readonly #pods = new Map<string, Pod>();
  #resourceVersion = '';
  #emitScheduled = false;
  #loop: Promise<void> | undefined;
  /** Lists done (tests and metrics read it). */
  lists = 0;

  constructor(opts: ApiPodSourceOptions) {
    this.#o = opts;
  }

  start(): void {
    this.#loop = this.#run();
  }

  /** The apiserver's pod with this UID as the watch last saw it (the informer's cache), or undefined. */
  get(uid: string): Pod | undefined {
    return this.#pods.get(uid);
  }

  async stop(): Promise<void> {
    this.#abort.abort();
    await this.#loop;
  }

  async #run(): Promise<void> {
    const signal = this.#abort.signal;
    const retry = new RetryDelay({ initialMs: 800, maxMs: 30_000 });
    let mustList = true;
    while (!signal.aborted) {
      try {
        if (mustList) {
          await this.#list();
          mustList = false;
        }
        await this.#watch(signal);
        retry.reset();
      } catch (err) {
        if (signal.aborted) break;
        if (isGone(err)) {
          this.#o.log.info({ resourceVersion: this.#resourceVersion }, 'Pod watch expired (410); relisting');
          mustList = true;
          continue;
        }
        // One warning per outage; the retries after it at debug.
        this.#o.log[retry.failing ? 'debug' : 'warn']({ err }, 'Pod list/watch failed; retrying');
        await delay(retry.next(), signal);
      }
    }
  }

  #selector(): string {
    return `spec.nodeName=${this.#o.nodeName}`;
  }

  async #list(): Promise<void> {
    const list = await this.#o.client.request<PodList>('GET', `/api/v1/pods${query({ fieldSelector: this.#selector() })}`, { timeoutMs: 60_000 });
    this.#pods.clear();
    for (const pod of list.items) {
      const uid = pod.metadata?.uid;
      if (uid) this.#pods.set(uid, withSourceAnnotation(pod));
    }
    this.#resourceVersion = list.metadata?.resourceVersion ?? '';
    this.lists++;
    this.#emitSoon();
  }

  async #watch(signal: AbortSignal): Promise<void> {
    const min = this.#o.minWatchTimeoutSeconds ?? 60;
    const timeoutSeconds = Math.floor(min * (1 + Math.random()));
    const path = `/api/v1/pods${query({
      fieldSelector: this.#selector(),
      watch: 1,
      resourceVersion: this.#resourceVersion,
      allowWatchBookmarks: true,
      timeoutSeconds,
    })}`;
    // The server ends the watch after timeoutSeconds; past that plus a margin it has stalled.
    await this.#o.client.watch<Pod>(path, (event) => this.#apply(event), { signal, idleTimeoutMs: (timeoutSeconds + 15) * 1000 });
  }

  #apply(event: WatchEvent<Pod>): void {
    const pod = event.object;
    const rv = pod.metadata?.resourceVersion;
    if (rv) this.#resourceVersion = rv;
    if (event.type === 'BOOKMARK') return;
    const uid = pod.metadata?.uid;
    if (!uid) return;
    if (event.type === 'DELETED') this.#pods.delete(uid);
    else this.#pods.set(uid, withSourceAnnotation(pod));
    this.#emitSoon();
  }

  /**
   * Coalesces a burst of events (a relist, many pods at once) into one snapshot. A pod no event
   * changed is the same object in every snapshot (annotated once, when it arrived), so
   * `PodConfig.update` skips comparing it: a burst of N pods costs O(N) per snapshot in identity
   * checks, not O(N) canonical-JSON renderings of whole specs.
   */
  #emitSoon(): void {
    if (this.#emitScheduled) return;
    this.#emitScheduled = true;
    setImmediate(() => {
      this.#emitScheduled = false;
      if (this.#abort.signal.aborted) return;
      this.#o.onPods([...this.#pods.values()]);
    });
  }
}

/** Pods from the apiserver carry `kubernetes.io/config.source: api`, as the kubelet's config adds. */
function withSourceAnnotation(pod: Pod): Pod {
  return { ...pod, metadata: { ...pod.metadata, annotations: { ...pod.metadata?.annotations, [ConfigSourceAnnotationKey]: 'api' } } };
}
