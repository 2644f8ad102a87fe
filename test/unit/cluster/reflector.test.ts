import t from 'tap';
import { pino } from 'pino';
import type { Node, Pod, Service } from 'kubernetes-types/core/v1.js';
import { ApiError, TransportError, type KubeClient, type WatchEvent } from '../../../src/apiserver/client.js';
import { Reflector } from '../../../src/cluster/reflector.js';
import { ApiPodSource } from '../../../src/cluster/pod-source.js';
import { NodeWatch } from '../../../src/cluster/node-watch.js';
import { ApiserverObjects } from '../../../src/cluster/objects.js';
import { waitFor } from '../../helpers/wait.js';

const log = pino({ level: 'silent' });

/**
 * A KubeClient stand-in without sockets: LISTs answer `items` at `resourceVersion`, each WATCH is
 * held open until the test pushes events into it, ends it, fails it, or the reflector aborts.
 */
function fakeApiserver<T>() {
  const state = {
    items: [] as T[],
    resourceVersion: '1',
    listError: undefined as Error | undefined,
    calls: [] as string[],
    watch: undefined as undefined | { path: string; push: (e: WatchEvent<T>) => void; end: () => void; fail: (err: Error) => void },
  };
  const client = {
    async request<R>(method: string, path: string): Promise<R> {
      state.calls.push(`${method} ${path}`);
      if (state.listError) throw state.listError;
      return { items: state.items, metadata: { resourceVersion: state.resourceVersion } } as R;
    },
    watch<E>(path: string, onEvent: (e: WatchEvent<E>) => void, opts: { signal?: AbortSignal }): Promise<void> {
      state.calls.push(`WATCH ${path}`);
      return new Promise<void>((resolve, reject) => {
        const done = () => {
          state.watch = undefined;
          resolve();
        };
        opts.signal?.addEventListener('abort', done, { once: true });
        state.watch = {
          path,
          push: (e) => onEvent(e as unknown as WatchEvent<E>),
          end: done,
          fail: (err) => {
            state.watch = undefined;
            reject(err);
          },
        };
      });
    },
  };
  return { client: client as unknown as KubeClient, state };
}

const pod = (uid: string, rv: string, name = uid): Pod => ({ metadata: { uid, name, namespace: 'default', resourceVersion: rv } });
const svc = (namespace: string, name: string, rv = '1'): Service => ({ metadata: { namespace, name, resourceVersion: rv }, spec: { clusterIP: '10.0.0.9', ports: [{ port: 80 }] } });

t.test('lists, then watches from the list\'s version; events change the store; a coalesced snapshot per burst', async (t) => {
  const { client, state } = fakeApiserver<Pod>();
  state.items = [pod('a', '5'), pod('b', '6')];
  state.resourceVersion = '7';
  const snapshots: string[][] = [];
  const r = new Reflector<Pod>({ client, log, path: '/api/v1/pods', kind: 'Pod', fieldSelector: 'spec.nodeName=n1', keyOf: (p) => p.metadata?.uid, onChange: (pods) => snapshots.push(pods.map((p) => p.metadata?.uid ?? '').sort()) });
  t.notOk(r.hasSynced, 'not synced before the first list');
  r.start();
  t.teardown(() => r.stop());
  await waitFor('watch open', () => state.watch);
  t.ok(r.hasSynced);
  t.match(state.calls[0], /^GET \/api\/v1\/pods\?fieldSelector=spec.nodeName%3Dn1$/);
  t.match(state.watch?.path, /fieldSelector=spec.nodeName%3Dn1&watch=1&resourceVersion=7&allowWatchBookmarks=true&timeoutSeconds=\d+/);
  await waitFor('first snapshot', () => snapshots[0]);
  t.same(snapshots, [['a', 'b']]);
  state.watch?.push({ type: 'ADDED', object: pod('c', '8') });
  state.watch?.push({ type: 'MODIFIED', object: pod('a', '9', 'a2') });
  state.watch?.push({ type: 'DELETED', object: pod('b', '10') });
  state.watch?.push({ type: 'BOOKMARK', object: { metadata: { resourceVersion: '11' } } });
  await waitFor('second snapshot', () => snapshots[1]);
  t.same(snapshots, [['a', 'b'], ['a', 'c']], 'three events, one snapshot; the bookmark changes nothing');
  t.equal(r.get('a')?.metadata?.name, 'a2');
  state.watch?.push({ type: 'DELETED', object: pod('zzz', '12') });
  // The watch ends (its timeoutSeconds): resumed from the last version seen, the bookmark's.
  state.watch?.end();
  await waitFor('watch resumed', () => (state.calls.length === 3 ? state.watch : undefined));
  t.match(state.watch?.path, /resourceVersion=12/, 'resumed from the last version seen');
  t.equal(r.lists, 1, 'no relist for a watch that ended');
  t.equal(snapshots.length, 2, 'deleting an object never kept is no change');
});

t.test('a 410 relists and the relist replaces the store; other failures retry', async (t) => {
  const { client, state } = fakeApiserver<Pod>();
  state.items = [pod('a', '5')];
  const r = new Reflector<Pod>({ client, log, path: '/api/v1/pods', kind: 'Pod', keyOf: (p) => p.metadata?.uid });
  r.start();
  t.teardown(() => r.stop());
  await waitFor('watch open', () => state.watch);
  state.items = [pod('b', '20')];
  state.resourceVersion = '21';
  state.watch?.fail(new ApiError(410, 'Expired', 'too old resource version'));
  await waitFor('relisted', () => (r.lists === 2 && state.watch ? true : undefined));
  t.same(r.list().map((p) => p.metadata?.uid), ['b'], 'the relist replaced the store: a is gone');
  t.match(state.watch?.path, /resourceVersion=21/);
  state.watch?.fail(new TransportError('ECONNRESET'));
  await waitFor('retried watch after the back-off', () => (state.calls.filter((c) => c.startsWith('WATCH')).length === 3 ? state.watch : undefined), 10_000);
  t.equal(r.lists, 2, 'a transport failure resumes the watch without a relist');
});

t.test('objects without a key are not kept; transform runs once per arrival', async (t) => {
  const { client, state } = fakeApiserver<Pod>();
  state.items = [pod('a', '5'), { metadata: { name: 'no-uid' } }];
  let transforms = 0;
  const r = new Reflector<Pod>({ client, log, path: '/api/v1/pods', kind: 'Pod', keyOf: (p) => p.metadata?.uid || undefined, transform: (p) => (transforms++, { ...p, spec: { containers: [] } }) });
  r.start();
  t.teardown(() => r.stop());
  await waitFor('watch open', () => state.watch);
  t.same(r.list().map((p) => p.metadata?.uid), ['a']);
  t.same(r.get('a')?.spec, { containers: [] });
  t.equal(transforms, 1);
  t.equal(r.get('a'), r.list()[0], 'the kept object is the transformed one, the same each read');
});

t.test('the pod source annotates its pods and hands the complete set over', async (t) => {
  const { client, state } = fakeApiserver<Pod>();
  state.items = [pod('a', '5')];
  const got: Pod[][] = [];
  const source = new ApiPodSource({ client, nodeName: 'n1', log, onPods: (pods) => got.push(pods) });
  source.start();
  t.teardown(() => source.stop());
  await waitFor('pods', () => got[0]);
  t.equal(got[0]?.[0]?.metadata?.annotations?.['kubernetes.io/config.source'], 'api');
  t.equal(source.get('a'), got[0]?.[0]);
  t.equal(source.lists, 1);
  t.match(state.calls[0], /fieldSelector=spec.nodeName%3Dn1/);
});

t.test('services: from the informer once it listed (no read per container start), the namespace and default/kubernetes only', async (t) => {
  const { client, state } = fakeApiserver<Service>();
  state.items = [svc('ns', 'foo'), svc('other', 'bar'), svc('default', 'kubernetes'), svc('default', 'not-master')];
  const objects = new ApiserverObjects(client, { log });
  objects.start();
  t.teardown(() => objects.stop());
  await waitFor('informer watching', () => state.watch);
  t.equal(state.calls[0], 'GET /api/v1/services', 'every namespace, no selector');
  const before = state.calls.length;
  const names = (list: Service[]) => list.map((s) => `${s.metadata?.namespace}/${s.metadata?.name}`).sort();
  t.same(names(await objects.listServices('ns')), ['default/kubernetes', 'ns/foo']);
  t.same(names(await objects.listServices('default')), ['default/kubernetes', 'default/not-master']);
  t.same(names(await objects.listServices('empty')), ['default/kubernetes']);
  t.equal(state.calls.length, before, 'no apiserver request for any of them');
  state.watch?.push({ type: 'ADDED', object: svc('ns', 'new', '2') });
  await waitFor('the new service seen', async () => ((await objects.listServices('ns')).length === 3 ? true : undefined));
  // The apiserver goes away: the informer's store still serves.
  state.listError = new TransportError('ECONNREFUSED');
  state.watch?.fail(new TransportError('ECONNRESET'));
  t.same(names(await objects.listServices('ns')), ['default/kubernetes', 'ns/foo', 'ns/new']);
});

t.test('services before the informer listed: read from the apiserver', async (t) => {
  const { client, state } = fakeApiserver<Service>();
  state.listError = new TransportError('ECONNREFUSED');
  const objects = new ApiserverObjects(client, { log });
  objects.start();
  t.teardown(() => objects.stop());
  await waitFor('the informer tried', () => (state.calls.length > 0 ? true : undefined));
  await t.rejects(objects.listServices('ns'), TransportError, 'nothing listed yet and the apiserver away: the start fails');
  t.ok(state.calls.some((c) => c === 'GET /api/v1/namespaces/ns/services'), 'the direct read was tried');
});

t.test('the node watch: its own Node by field selector, synced once the Node is seen, undefined once deleted', async (t) => {
  const { client, state } = fakeApiserver<Node>();
  const seen: (Node | undefined)[] = [];
  const watch = new NodeWatch({ client, nodeName: 'node-1', log, onNode: (n) => seen.push(n) });
  t.teardown(() => watch.stop());
  let synced = false;
  void watch.synced().then(() => (synced = true));
  watch.start();
  await waitFor('watching', () => state.watch, 2000, 5);
  t.match(state.calls[0], /^GET \/api\/v1\/nodes\?.*fieldSelector=metadata.name%3Dnode-1/, 'lists its own Node only');
  t.match(state.watch?.path, /fieldSelector=metadata.name%3Dnode-1/);
  t.same(seen, [undefined], 'not registered yet: nothing');
  t.notOk(synced, 'not synced without the Node');
  state.watch?.push({ type: 'ADDED', object: { metadata: { name: 'node-1', resourceVersion: '2', labels: { zone: 'a' } } } });
  await waitFor('synced', () => (synced ? true : undefined), 2000, 5);
  t.same(watch.node?.metadata?.labels, { zone: 'a' });
  state.watch?.push({ type: 'MODIFIED', object: { metadata: { name: 'node-1', resourceVersion: '3', labels: { zone: 'b' } } } });
  await waitFor('the new labels', () => (seen.at(-1)?.metadata?.labels?.zone === 'b' ? true : undefined), 2000, 5);
  state.watch?.push({ type: 'DELETED', object: { metadata: { name: 'node-1', resourceVersion: '4' } } });
  await waitFor('gone', () => (seen.length > 2 && seen.at(-1) === undefined ? true : undefined), 2000, 5);
  t.equal(watch.node, undefined);
  let again = false;
  await watch.synced().then(() => (again = true));
  t.ok(again, 'synced stays true once the Node was seen');
});
