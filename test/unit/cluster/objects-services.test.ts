import t from 'tap';
import type { Service } from 'kubernetes-types/core/v1.js';
import { ApiError, TransportError, type KubeClient } from '../../../src/apiserver/client.js';
import { ApiserverObjects } from '../../../src/cluster/objects.js';

/** A KubeClient stand-in answering GETs from a table, or failing every call while `down`. */
function fakeClient(services: Record<string, Service[]>) {
  const state = { down: false as false | Error, calls: [] as string[] };
  const client = {
    async request<T>(_method: string, path: string): Promise<T> {
      state.calls.push(path);
      if (state.down) throw state.down;
      const list = /^\/api\/v1\/namespaces\/([^/]+)\/services$/.exec(path);
      if (list) return { items: services[list[1] ?? ''] ?? [] } as T;
      const one = /^\/api\/v1\/namespaces\/default\/services\/(.+)$/.exec(path);
      const found = (services.default ?? []).find((s) => s.metadata?.name === one?.[1]);
      if (!found) throw new ApiError(404, 'NotFound', 'not found');
      return found as T;
    },
  };
  return { client: client as unknown as KubeClient, state };
}

const svc = (name: string, namespace?: string): Service => ({ metadata: { name, ...(namespace ? { namespace } : {}) }, spec: { clusterIP: '10.0.0.1', ports: [{ port: 80 }] } });

t.test("the namespace's services (namespaced) and default's kubernetes; the last list serves while the apiserver is away", async (t) => {
  const { client, state } = fakeClient({ ns: [svc('foo')], default: [svc('kubernetes', 'default')] });
  const objects = new ApiserverObjects(client);
  const first = await objects.listServices('ns');
  t.same(first.map((s) => `${s.metadata?.namespace}/${s.metadata?.name}`), ['ns/foo', 'default/kubernetes']);
  state.down = new TransportError('GET: ECONNREFUSED');
  t.same(await objects.listServices('ns'), first, 'transport failure: the last list');
  await t.rejects(objects.listServices('other'), TransportError, 'nothing read yet for that namespace: the failure');
  state.down = new ApiError(403, 'Forbidden', 'forbidden');
  await t.rejects(objects.listServices('ns'), ApiError, 'an answer from the apiserver is not an outage');
});

t.test('in the default namespace one list holds kubernetes', async (t) => {
  const { client, state } = fakeClient({ default: [svc('kubernetes')] });
  const services = await new ApiserverObjects(client).listServices('default');
  t.same(services.map((s) => s.metadata?.name), ['kubernetes']);
  t.same(state.calls, ['/api/v1/namespaces/default/services']);
});
