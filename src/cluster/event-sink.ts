import type { Event } from 'kubernetes-types/core/v1.js';
import type { Logger } from '../logging/index.js';
import { ApiError, isNotFound, type KubeClient } from '../apiserver/client.js';
import { RetryDelay, delay } from './retry.js';

/**
 * Sends the recorder's events to the apiserver as core/v1 Events (the kubelet's event
 * broadcaster sink): a new event is created, a repeat (same object, reason and message) patches
 * the existing one's `count` and `lastTimestamp`. The queue is bounded — when the apiserver is
 * slow or away the oldest unsent events are dropped, never memory grown — and each event is
 * tried a bounded number of times, as client-go's sink does (12 tries).
 */
export class EventSink {
  readonly #client: KubeClient;
  readonly #log: Logger;
  readonly #capacity: number;
  /** Event name → newest version to send; a Map keeps insertion order for FIFO. */
  readonly #queue = new Map<string, { event: Event; isNew: boolean; tries: number }>();
  /** Names the apiserver already holds (bounded like the queue). */
  readonly #created = new Set<string>();
  readonly #abort = new AbortController();
  #draining: Promise<void> | undefined;
  /** Events dropped because the queue was full or their tries ran out. */
  dropped = 0;

  constructor(opts: { client: KubeClient; log: Logger; capacity?: number }) {
    this.#client = opts.client;
    this.#log = opts.log;
    this.#capacity = opts.capacity ?? 1000;
  }

  /** Queues `event` (the recorder calls it for every record, new or repeated). Never blocks. */
  push(event: Event): void {
    const name = event.metadata.name ?? '';
    const queued = this.#queue.get(name);
    this.#queue.delete(name);
    this.#queue.set(name, { event, isNew: queued?.isNew ?? !this.#created.has(name), tries: queued?.tries ?? 0 });
    while (this.#queue.size > this.#capacity) {
      const oldest = this.#queue.keys().next().value as string;
      this.#queue.delete(oldest);
      this.dropped++;
    }
    this.#draining ??= this.#drain().finally(() => {
      this.#draining = undefined;
    });
  }

  async stop(): Promise<void> {
    this.#abort.abort();
    await this.#draining;
  }

  async #drain(): Promise<void> {
    const retry = new RetryDelay({ initialMs: 500, maxMs: 10_000 });
    while (this.#queue.size > 0 && !this.#abort.signal.aborted) {
      const [name, item] = this.#queue.entries().next().value as [string, { event: Event; isNew: boolean; tries: number }];
      try {
        await this.#send(item.event, item.isNew);
        if (this.#queue.get(name) === item) this.#queue.delete(name);
        else if (this.#queue.has(name)) this.#queue.get(name)!.isNew = false;
        this.#remember(name);
        retry.reset();
      } catch (err) {
        item.tries++;
        if (item.tries >= 12 || (err instanceof ApiError && err.code >= 400 && err.code < 500 && err.code !== 429)) {
          if (this.#queue.get(name) === item) this.#queue.delete(name);
          this.dropped++;
          this.#log.debug({ err, event: name }, 'Dropping event the apiserver did not take');
        } else {
          await delay(retry.next(), this.#abort.signal);
        }
      }
    }
  }

  async #send(event: Event, isNew: boolean): Promise<void> {
    const ns = encodeURIComponent(event.metadata.namespace ?? 'default');
    // Annotations go too: the eviction manager's `Evicted` event carries them (`AnnotatedEventf`).
    const { name, namespace, annotations } = event.metadata;
    const body: Event = { ...event, metadata: { name, namespace, ...(annotations ? { annotations } : {}) } };
    if (!isNew) {
      try {
        await this.#client.request('PATCH', `/api/v1/namespaces/${ns}/events/${encodeURIComponent(event.metadata.name ?? '')}`, {
          body: { count: event.count, lastTimestamp: event.lastTimestamp, message: event.message },
          contentType: 'application/strategic-merge-patch+json',
        });
        return;
      } catch (err) {
        // Expired on the apiserver (events live an hour): create it again.
        if (!isNotFound(err)) throw err;
      }
    }
    await this.#client.request('POST', `/api/v1/namespaces/${ns}/events`, { body });
  }

  #remember(name: string): void {
    this.#created.add(name);
    if (this.#created.size > this.#capacity * 4) this.#created.delete(this.#created.values().next().value as string);
  }
}
