import { randomUUID } from 'node:crypto';
import { rfc3339 } from '../api/time.js';
import { NOTE_LENGTH_LIMIT, truncateMessage } from '../api/truncate.js';
import type { Event, ObjectMeta, ObjectReference } from '../api/types.js';

export type EventType = 'Normal' | 'Warning';

/** The object an event is about, as the kubelet's `record.EventRecorder` takes it. */
export interface EventSubject {
  kind?: string;
  apiVersion?: string;
  metadata?: ObjectMeta;
  fieldPath?: string;
}

/**
 * Records Kubernetes Events in memory, like the kubelet's recorder, so `kubectl describe` and
 * `GET /api/v1/namespaces/{ns}/events` show them. Bounded: the oldest events are dropped past
 * `capacity`, and a repeat of the same (object, reason, message) bumps `count` instead of growing.
 * A message is cut to `NOTE_LENGTH_LIMIT` (1 KiB, events.k8s.io's `note` limit) before anything
 * else sees it, so an event costs at most that whatever it reports, and the events list, the
 * watch and cluster mode's sink never carry more.
 */
export class EventRecorder {
  readonly #events = new Map<string, Event>();
  readonly #capacity: number;
  readonly #component: string;
  readonly #host: string;
  readonly #listeners: ((event: Event) => void)[] = [];

  constructor(opts: { nodeName: string; capacity?: number }) {
    this.#capacity = opts.capacity ?? 1000;
    this.#component = 'kubelet';
    this.#host = opts.nodeName;
  }

  /** Records an event; `annotations` go on the Event's metadata (client-go's `AnnotatedEventf`). */
  record(subject: EventSubject, type: EventType, reason: string, fullMessage: string, annotations?: Readonly<Record<string, string>>): Event {
    const message = truncateMessage(fullMessage, NOTE_LENGTH_LIMIT);
    const meta = subject.metadata ?? {};
    const involvedObject: ObjectReference = {
      kind: subject.kind ?? 'Pod',
      apiVersion: subject.apiVersion ?? 'v1',
      namespace: meta.namespace ?? 'default',
      name: meta.name ?? '',
      ...(meta.uid ? { uid: meta.uid } : {}),
      ...(subject.fieldPath ? { fieldPath: subject.fieldPath } : {}),
    };
    const key = [involvedObject.namespace, involvedObject.name, involvedObject.uid, involvedObject.fieldPath, type, reason, message].join('\0');
    const now = rfc3339(new Date());
    const existing = this.#events.get(key);
    if (existing) {
      // Move to the end so eviction order stays "least recently seen first".
      this.#events.delete(key);
      const bumped: Event = { ...existing, count: (existing.count ?? 1) + 1, lastTimestamp: now };
      this.#events.set(key, bumped);
      this.#emit(bumped);
      return bumped;
    }
    const event: Event = {
      kind: 'Event',
      apiVersion: 'v1',
      metadata: {
        name: `${involvedObject.name}.${randomUUID().replaceAll('-', '').slice(0, 16)}`,
        // client-go's recorder: an event about a cluster-scoped object (a Node) lives in `default`.
        namespace: involvedObject.namespace || 'default',
        uid: randomUUID(),
        creationTimestamp: now,
        ...(annotations && Object.keys(annotations).length ? { annotations: { ...annotations } } : {}),
      },
      involvedObject,
      reason,
      message,
      type,
      count: 1,
      firstTimestamp: now,
      lastTimestamp: now,
      source: { component: this.#component, host: this.#host },
      reportingComponent: this.#component,
      reportingInstance: this.#host,
    };
    this.#events.set(key, event);
    while (this.#events.size > this.#capacity) {
      const oldest = this.#events.keys().next().value as string;
      this.#events.delete(oldest);
    }
    this.#emit(event);
    return event;
  }

  /** Calls `listener` with every event recorded or bumped from now on (cluster mode's sink). */
  onRecord(listener: (event: Event) => void): void {
    this.#listeners.push(listener);
  }

  #emit(event: Event): void {
    for (const listener of this.#listeners) listener(event);
  }

  /** Events in `namespace` (all namespaces when undefined) matching every `field=value` pair. */
  list(namespace: string | undefined, fields: ReadonlyMap<string, string> = new Map()): Event[] {
    const out: Event[] = [];
    for (const event of this.#events.values()) {
      if (namespace !== undefined && event.metadata.namespace !== namespace) continue;
      if (matchesFields(event, fields)) out.push(event);
    }
    return out;
  }
}

const fieldGetters: Record<string, (e: Event) => string | undefined> = {
  'involvedObject.name': (e) => e.involvedObject.name,
  'involvedObject.namespace': (e) => e.involvedObject.namespace,
  'involvedObject.uid': (e) => e.involvedObject.uid,
  'involvedObject.kind': (e) => e.involvedObject.kind,
  'involvedObject.fieldPath': (e) => e.involvedObject.fieldPath,
  'metadata.name': (e) => e.metadata.name,
  'metadata.namespace': (e) => e.metadata.namespace,
  reason: (e) => e.reason,
  type: (e) => e.type,
  'source': (e) => e.source?.component,
};

/** Field names an events field selector may use; others are a 400, as on the apiserver. */
export const eventSelectableFields: ReadonlySet<string> = new Set(Object.keys(fieldGetters));

function matchesFields(event: Event, fields: ReadonlyMap<string, string>): boolean {
  for (const [field, want] of fields) {
    const get = fieldGetters[field];
    if (!get || (get(event) ?? '') !== want) return false;
  }
  return true;
}
