import type { FastifyInstance, FastifyRequest } from 'fastify';
import { badRequest } from '../../api/errors.js';
import type { EventList } from '../../api/types.js';
import { eventSelectableFields } from '../../events/recorder.js';
import type { Host } from '../host.js';
import { getRoute } from '../methods.js';
import { queryValue, refuseWatch } from '../params.js';
import { parseFieldSelector } from '../selectors.js';

/**
 * `GET /api/v1/events` and `/api/v1/namespaces/{ns}/events`: the recorder's events as an
 * EventList. `kubectl describe pod` sends
 * `fieldSelector=involvedObject.name=…,involvedObject.namespace=…,involvedObject.uid=…`; fields
 * outside `eventSelectableFields` are the apiserver's `field label not supported` 400.
 */
export async function apiEventsPlugin(app: FastifyInstance, opts: { host: Host }): Promise<void> {
  const { host } = opts;

  const list = async (request: FastifyRequest<{ Params: { ns?: string } }>): Promise<EventList> => {
    refuseWatch(request, 'events');
    const reqs = parseFieldSelector(queryValue(request, 'fieldSelector'), eventSelectableFields);
    const fields = new Map<string, string>();
    let contradictory = false;
    for (const r of reqs) {
      // The recorder matches equality only; kubectl never sends anything else for events.
      if (r.op !== '=') throw badRequest(`field selector operator "!=" is not supported for events: ${r.field}`);
      const prev = fields.get(r.field);
      if (prev !== undefined && prev !== r.value) contradictory = true; // a=x,a=y selects nothing
      fields.set(r.field, r.value);
    }
    const items = contradictory ? [] : host.getEvents(request.params.ns, fields);
    return { kind: 'EventList', apiVersion: 'v1', metadata: {}, items };
  };
  getRoute(app, '/api/v1/events', list);
  getRoute(app, '/api/v1/namespaces/:ns/events', list);
}
