import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { badRequest } from '../../api/errors.js';
import type { Event } from '../../api/types.js';
import { eventSelectableFields } from '../../events/recorder.js';
import type { Host } from '../../host/index.js';
import { getRoute } from '../methods.js';
import { preferredTableVersion } from '../negotiate.js';
import { queryValue } from '../params.js';
import { parseFieldSelector } from '../selectors.js';
import { eventsToTable } from '../table.js';
import { isWatchRequest, serveWatch, type WatchStreams } from '../watch.js';
import { checkListRequest } from '../list-options.js';

/**
 * `GET /api/v1/events` and `/api/v1/namespaces/{ns}/events`: the recorder's events as an
 * EventList, a Table with the apiserver's columns (`kubectl get events`), or a watch
 * (`kubectl get events -w`, `kubectl events -w`). `kubectl describe pod` sends
 * `fieldSelector=involvedObject.name=…,involvedObject.namespace=…,involvedObject.uid=…`; fields
 * outside `eventSelectableFields` are the apiserver's `field label not supported` 400.
 */

/** The field selector as `field → value` pairs (equality only); undefined when it selects nothing (`a=x,a=y`). */
function eventFields(request: FastifyRequest): Map<string, string> | undefined {
  const reqs = parseFieldSelector(queryValue(request, 'fieldSelector'), eventSelectableFields);
  const fields = new Map<string, string>();
  let contradictory = false;
  for (const r of reqs) {
    // The recorder matches equality only; kubectl never sends anything else for events.
    if (r.op !== '=') throw badRequest(`field selector operator "!=" is not supported for events: ${r.field}`);
    const prev = fields.get(r.field);
    if (prev !== undefined && prev !== r.value) contradictory = true;
    fields.set(r.field, r.value);
  }
  return contradictory ? undefined : fields;
}

const eventFieldGetters: Record<string, (e: Event) => string | undefined> = {
  'involvedObject.name': (e) => e.involvedObject.name,
  'involvedObject.namespace': (e) => e.involvedObject.namespace,
  'involvedObject.uid': (e) => e.involvedObject.uid,
  'involvedObject.kind': (e) => e.involvedObject.kind,
  'involvedObject.fieldPath': (e) => e.involvedObject.fieldPath,
  'metadata.name': (e) => e.metadata.name,
  'metadata.namespace': (e) => e.metadata.namespace,
  reason: (e) => e.reason,
  type: (e) => e.type,
  source: (e) => e.source?.component,
};

export async function apiEventsPlugin(app: FastifyInstance, opts: { host: Host; streams: WatchStreams }): Promise<void> {
  const { host, streams } = opts;

  const list = async (request: FastifyRequest<{ Params: { ns?: string } }>, reply: FastifyReply) => {
    const watch = isWatchRequest(request);
    const fields = eventFields(request);
    const ns = request.params.ns;
    if (watch) {
      const filter = (e: Event) =>
        fields !== undefined &&
        (ns === undefined || e.metadata.namespace === ns) &&
        [...fields].every(([f, want]) => (eventFieldGetters[f]?.(e) ?? '') === want);
      return serveWatch(request, reply, { hub: host.watch.events.hub, filter, table: eventsToTable, streams });
    }
    const { items, resourceVersion } = fields ? host.watch.events.list(ns, fields) : { items: [], resourceVersion: host.watch.events.hub.resourceVersion };
    checkListRequest(request, resourceVersion);
    const table = preferredTableVersion(request.headers.accept);
    return table ? eventsToTable(items, new Date(), table, resourceVersion) : { kind: 'EventList', apiVersion: 'v1', metadata: { resourceVersion }, items };
  };
  getRoute(app, '/api/v1/events', list);
  getRoute(app, '/api/v1/namespaces/:ns/events', list);
}
