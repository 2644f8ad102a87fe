import { createServer } from 'node:net';
import * as k8s from '@kubernetes/client-node';
import t from 'tap';
import type { Pod, PodList } from '../../src/api/types.js';
import { BUSYBOX, dockerCLI, testDocker } from '../helpers/docker.js';
import { kubectlFor } from '../helpers/kubectl.js';
import { kubectlStream } from '../helpers/kubectl-stream.js';
import { startTestNode, type TestNode } from '../helpers/nodelet.js';
import { openWatch } from '../helpers/watch-client.js';

/**
 * kubectl pointed straight at nodelet, beyond `get`/`describe pod`: watches (pods in one
 * namespace and all, events, the node), the Node (`get nodes`, `describe node`, `top node`),
 * namespaces, events as a Table, and `delete pod` on a static pod — with kubectl 1.27 and 1.33.
 */

const web = `apiVersion: v1
kind: Pod
metadata: { name: web, labels: { app: web } }
spec:
  terminationGracePeriodSeconds: 1
  containers:
    - name: httpd
      image: ${BUSYBOX}
      imagePullPolicy: IfNotPresent
      command: ["httpd", "-f", "-p", "8080", "-h", "/www"]
`;

/** Ignores SIGTERM, so a delete takes exactly its grace period. */
const stubbornGrace = 8;
const stubborn = `apiVersion: v1
kind: Pod
metadata: { name: stubborn, namespace: demo }
spec:
  terminationGracePeriodSeconds: ${stubbornGrace}
  containers:
    - name: loop
      image: ${BUSYBOX}
      imagePullPolicy: IfNotPresent
      command: ["sh", "-c", "trap '' TERM; while :; do sleep 1; done"]
`;

async function podOf(node: TestNode, name: string, namespace: string): Promise<Pod | undefined> {
  const { body } = await node.get<Pod>(`/api/v1/namespaces/${namespace}/pods/${name}-${node.nodeName}`);
  return body.metadata ? body : undefined;
}

const running = (p: Pod | undefined) => p?.status?.phase === 'Running' && (p.status.containerStatuses ?? []).every((c) => c.ready && c.state?.running);

async function runningContainerID(node: TestNode, pod: string, container: string): Promise<string> {
  const list = await testDocker().listContainers({
    filters: { label: [`io.nodelet.node=${node.nodeName}`, `io.kubernetes.pod.name=${pod}`, `io.kubernetes.container.name=${container}`], status: ['running'] },
  });
  const id = list[0]?.Id;
  if (!id) throw new Error(`no running ${pod}/${container}`);
  return id;
}

/** A port nothing listens on right now, so a restarted nodelet can come back on the same one. */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });
}

t.test('kubectl sees the node as a cluster: watch, nodes, namespaces, events, delete', async (t) => {
  const node = await startTestNode(t);
  await node.writeManifest('web.yaml', web);
  await node.writeManifest('stubborn.yaml', stubborn);
  const webName = `web-${node.nodeName}`;
  const stubbornName = `stubborn-${node.nodeName}`;
  await node.waitFor('pods running', async () => (running(await podOf(node, 'web', 'default')) && running(await podOf(node, 'stubborn', 'demo')) ? true : undefined), 60_000);

  for (const version of ['1.27', '1.33']) {
    t.test(`kubectl ${version}`, async (t) => {
      const kubectl = await kubectlFor(t, version, node.url);

      t.test('get pods -w, get pods -A -w, get events -w: a container killed behind nodelet’s back', async (t) => {
        const before = (await podOf(node, 'web', 'default'))?.status?.containerStatuses?.[0]?.restartCount ?? 0;
        const one = kubectlStream(kubectl, 'get', 'pods', '-w');
        const all = kubectlStream(kubectl, 'get', 'pods', '-A', '-w');
        const events = kubectlStream(kubectl, 'get', 'events', '-w');
        t.teardown(async () => {
          await Promise.all([one.stop(), all.stop(), events.stop()]);
        });
        await one.waitFor('the list', new RegExp(`^NAME\\s+READY\\s+STATUS\\s+RESTARTS\\s+AGE\\n${webName}\\s+1/1\\s+Running\\s+${before}\\s`, 'm'));
        await all.waitFor('the list with namespaces', new RegExp(`^NAMESPACE\\s+NAME\\s+READY\\s+STATUS\\s+RESTARTS\\s+AGE\\n`, 'm'));
        await all.waitFor('the demo pod', new RegExp(`^demo\\s+${stubbornName}\\s+1/1\\s+Running`, 'm'));
        await events.waitFor('the event list', /^LAST SEEN\s+TYPE\s+REASON\s+OBJECT\s+MESSAGE\n/m);
        const listed = { one: one.stdout.length, all: all.stdout.length, events: events.stdout.length };
        t.notOk(one.stdout.includes('demo'), 'one namespace only');

        await dockerCLI('kill', await runningContainerID(node, webName, 'httpd'));

        const restarts = String(before + 1);
        await one.waitFor('the restart', new RegExp(`^${webName}\\s+1/1\\s+Running\\s+${restarts}\\s`, 'm'), 30_000, listed.one);
        await all.waitFor('the restart, with its namespace', new RegExp(`^default\\s+${webName}\\s+1/1\\s+Running\\s+${restarts}\\s`, 'm'), 30_000, listed.all);
        await events.waitFor('the container started again', new RegExp(`^\\S+\\s+Normal\\s+Started\\s+pod/${webName}\\s+Started container httpd`, 'm'), 30_000, listed.events);
        t.notMatch(all.stdout.slice(listed.all), new RegExp(`^demo\\s+${stubbornName}`, 'm'), 'no event for the pod that did not change');
        t.pass('every watch reported the restart');
      });

      t.test('get nodes, -o wide, get nodes -w sees a change of the node', async (t) => {
        const get = await kubectl.run('get', 'nodes');
        t.equal(get.code, 0, get.stderr);
        t.match(get.stdout, new RegExp(`^NAME\\s+STATUS\\s+ROLES\\s+AGE\\s+VERSION\\n${node.nodeName}\\s+Ready\\s+<none>\\s+\\S+\\s+v\\d+\\.\\d+\\.\\d+\\S*\\n$`));
        const wide = await kubectl.run('get', 'nodes', '-o', 'wide');
        t.equal(wide.code, 0, wide.stderr);
        t.match(wide.stdout, /^NAME\s+STATUS\s+ROLES\s+AGE\s+VERSION\s+INTERNAL-IP\s+EXTERNAL-IP\s+OS-IMAGE\s+KERNEL-VERSION\s+CONTAINER-RUNTIME\n/);
        t.match(wide.stdout, new RegExp(`^${node.nodeName}\\s+Ready\\s+<none>\\s+\\S+\\s+\\S+\\s+127\\.0\\.0\\.1\\s+<none>\\s+.+\\s+\\S+\\s+docker://\\S+\\n`, 'm'));
        const json = await kubectl.run('get', 'node', node.nodeName, '-o', 'json');
        t.equal(json.code, 0, json.stderr);
        t.match(JSON.parse(json.stdout), { kind: 'Node', metadata: { name: node.nodeName, labels: { 'kubernetes.io/hostname': node.nodeName } }, status: { nodeInfo: { operatingSystem: 'linux' } } });

        const w = kubectlStream(kubectl, 'get', 'nodes', '-w', '--output-watch-events');
        t.teardown(async () => {
          await w.stop();
        });
        await w.waitFor('the node', new RegExp(`^EVENT\\s+NAME\\s+STATUS.*\\nADDED\\s+${node.nodeName}\\s+Ready`, 'm'));
        const tag = `nodelet.local/watch-${version.replace('.', '-')}:${node.nodeName}`;
        t.teardown(() => dockerCLI('rmi', tag).then(() => undefined, () => undefined));
        // A new image name changes the Node's status.images: the node source's next refresh reports it.
        await dockerCLI('tag', BUSYBOX, tag);
        await w.waitFor('the node MODIFIED', new RegExp(`^MODIFIED\\s+${node.nodeName}\\s+Ready`, 'm'), 45_000);
        const { body } = await node.get<{ status?: { images?: { names: string[] }[] } }>(`/api/v1/nodes/${node.nodeName}`);
        t.ok(body.status?.images?.some((i) => i.names.includes(tag)), 'the new image is listed');
      });

      t.test('describe node: conditions, addresses, capacity and its pods with their requests', async (t) => {
        const d = await kubectl.run('describe', 'node', node.nodeName);
        t.equal(d.code, 0, d.stderr);
        t.match(d.stdout, new RegExp(`^Name:\\s+${node.nodeName}$`, 'm'));
        t.match(d.stdout, /^\s+Ready\s+True\s+.*KubeletReady\s+kubelet is posting ready status/m);
        t.match(d.stdout, /^\s+InternalIP:\s+127\.0\.0\.1$/m);
        t.match(d.stdout, /^Capacity:\n\s+cpu:\s+\d+\n/m);
        t.match(d.stdout, /^\s+Container Runtime Version:\s+docker:\/\//m);
        t.match(d.stdout, /^Non-terminated Pods:\s+\(2 in total\)/m);
        t.match(d.stdout, new RegExp(`^\\s+default\\s+${webName}\\s+0 \\(0%\\)`, 'm'));
        t.match(d.stdout, new RegExp(`^\\s+demo\\s+${stubbornName}\\s+0 \\(0%\\)`, 'm'));
        t.match(d.stdout, /^Allocated resources:/m);
      });

      t.test('top node lists the node, then its metrics', async (t) => {
        // A CPU rate needs two samples: sample until the node's metrics are served.
        await node.waitFor('node metrics', async () => {
          await node.nodelet.stats.sampleNow();
          return (await node.get(`/apis/metrics.k8s.io/v1beta1/nodes/${node.nodeName}`)).status === 200 ? true : undefined;
        });
        const top = await kubectl.run('top', 'node');
        t.equal(top.code, 0, top.stderr);
        t.match(top.stdout, /^NAME\s+CPU\(cores\)\s+CPU(%|\(%\))\s+MEMORY\(bytes\)\s+MEMORY(%|\(%\))\s*\n/);
        t.match(top.stdout, new RegExp(`^${node.nodeName}\\s+\\d+m\\s+\\d+%\\s+\\d+Mi\\s+\\d+%\\s*$`, 'm'));
      });

      t.test('get ns: the namespaces holding pods and the four every cluster has', async (t) => {
        const ns = await kubectl.run('get', 'ns');
        t.equal(ns.code, 0, ns.stderr);
        const rows = ns.stdout.trim().split('\n');
        t.match(rows[0], /^NAME\s+STATUS\s+AGE$/);
        t.same(rows.slice(1).map((r) => r.split(/\s+/).slice(0, 2).join(' ')), ['default Active', 'demo Active', 'kube-node-lease Active', 'kube-public Active', 'kube-system Active']);
      });

      t.test('get events is a Table with the apiserver columns; kubectl events keeps working', async (t) => {
        const ev = await kubectl.run('get', 'events');
        t.equal(ev.code, 0, ev.stderr);
        t.match(ev.stdout, /^LAST SEEN\s+TYPE\s+REASON\s+OBJECT\s+MESSAGE\n/);
        t.match(ev.stdout, new RegExp(`^\\S+\\s+Normal\\s+Started\\s+pod/${webName}\\s+Started container httpd$`, 'm'));
        const wide = await kubectl.run('get', 'events', '-o', 'wide', '-n', 'demo');
        t.equal(wide.code, 0, wide.stderr);
        t.match(wide.stdout, /^LAST SEEN\s+TYPE\s+REASON\s+OBJECT\s+SUBOBJECT\s+SOURCE\s+MESSAGE\s+FIRST SEEN\s+COUNT\s+NAME\n/);
        t.match(wide.stdout, new RegExp(`pod/${stubbornName}\\s+spec\\.containers\\{loop\\}\\s+kubelet, ${node.nodeName}\\s+`, 'm'));
        const events = await kubectl.run('events');
        t.equal(events.code, 0, events.stderr);
        t.match(events.stdout, /^LAST SEEN\s+TYPE\s+REASON\s+OBJECT\s+MESSAGE\n/);
        t.match(events.stdout, new RegExp(`Pod/${webName}\\s+Started container httpd`, 'm'));
      });

      t.test('delete pod on a static pod: killed with its grace period and recreated from the manifest', async (t) => {
        const before = await podOf(node, 'stubborn', 'demo');
        const oldID = await runningContainerID(node, stubbornName, 'loop');
        const w = kubectlStream(kubectl, 'get', 'pods', '-n', 'demo', '-w', '--output-watch-events');
        t.teardown(async () => {
          await w.stop();
        });
        await w.waitFor('the list', new RegExp(`^ADDED\\s+${stubbornName}\\s+1/1\\s+Running`, 'm'));
        const from = w.stdout.length;

        const started = Date.now();
        const del = await kubectl.run('delete', 'pod', stubbornName, '-n', 'demo', '--grace-period=1');
        const took = Date.now() - started;
        t.equal(del.code, 0, del.stderr);
        t.match(del.stdout, new RegExp(`^pod "${stubbornName}" deleted\\n$`));
        t.ok(took >= 1000 && took < (stubbornGrace - 2) * 1000, `--grace-period=1 honoured (SIGTERM ignored): ${took} ms`);
        await w.waitFor('Terminating, DELETED, then ADDED again', new RegExp(`^MODIFIED\\s+${stubbornName}\\s+1/1\\s+Terminating[\\s\\S]*^DELETED\\s+${stubbornName}[\\s\\S]*^ADDED\\s+${stubbornName}\\s`, 'm'), 30_000, from);
        const after = await node.waitFor('recreated and running', async () => {
          const p = await podOf(node, 'stubborn', 'demo');
          return running(p) ? p : undefined;
        }, 30_000);
        t.equal(after.metadata?.uid, before?.metadata?.uid, 'the same pod, from the same manifest');
        t.equal(after.metadata?.deletionTimestamp, undefined);
        t.equal(after.status?.containerStatuses?.[0]?.restartCount, 0, 'a new incarnation: no restarts');
        t.not(await runningContainerID(node, stubbornName, 'loop'), oldID, 'a new container');
        t.match(await dockerCLI('ps', '-a', '-q', '--filter', `id=${oldID}`), /^\s*$/, 'the old container is removed');

        // Without --grace-period: the pod's terminationGracePeriodSeconds.
        const again = Date.now();
        const plain = await kubectl.run('delete', 'pod', stubbornName, '-n', 'demo');
        t.equal(plain.code, 0, plain.stderr);
        t.ok(Date.now() - again >= stubbornGrace * 1000, `the default grace (${stubbornGrace} s) was honoured: ${Date.now() - again} ms`);
        await node.waitFor('recreated again', async () => (running(await podOf(node, 'stubborn', 'demo')) ? true : undefined), 30_000);

        const missing = await kubectl.run('delete', 'pod', 'nopod');
        t.equal(missing.code, 1);
        t.match(missing.stderr, /Error from server \(NotFound\): pods "nopod" not found/);
      });
    });
  }
});

t.test('resourceVersion: a watch from before a restart gets 410 Expired and the client relists', async (t) => {
  const port = await freePort();
  const node = await startTestNode(t, { port });
  await node.writeManifest('web.yaml', web);
  await node.waitFor('pod running', async () => (running(await podOf(node, 'web', 'default')) ? true : undefined), 60_000);

  const list = (await node.get<PodList>('/api/v1/namespaces/default/pods')).body;
  const oldRV = list.metadata?.resourceVersion ?? '';
  t.match(oldRV, /^\d+$/);

  // client-node 1.4's ListWatch, with the Watch it uses recorded.
  const kc = new k8s.KubeConfig();
  kc.loadFromOptions({
    clusters: [{ name: 'nodelet', server: node.url, skipTLSVerify: true }],
    users: [{ name: 'nodelet' }],
    contexts: [{ name: 'nodelet', cluster: 'nodelet', user: 'nodelet' }],
    currentContext: 'nodelet',
  });
  const realWatch = new k8s.Watch(kc);
  const watchEnds: Array<{ statusCode?: number } | null> = [];
  const watchStarts: string[] = [];
  const recorded = {
    watch: (path: string, params: Record<string, string>, cb: (phase: string, obj: unknown, raw: unknown) => void, done: (err: unknown) => void) => {
      watchStarts.push(String(params.resourceVersion ?? ''));
      return realWatch.watch(path, params, cb, (err: unknown) => {
        watchEnds.push(err as { statusCode?: number } | null);
        done(err);
      });
    },
  } as unknown as k8s.Watch;
  let lists = 0;
  const listFn = async () => {
    lists++;
    return (await (await fetch(`${node.url}/api/v1/namespaces/default/pods`)).json()) as k8s.KubernetesListObject<k8s.V1Pod>;
  };
  const lw = new k8s.ListWatch<k8s.V1Pod>('/api/v1/namespaces/default/pods', recorded, listFn, false);
  const errors: unknown[] = [];
  lw.on('error', (err) => errors.push(err));
  t.teardown(() => lw.stop());
  await lw.start();
  await node.waitFor('the first watch', () => (watchStarts.length === 1 ? true : undefined));
  t.equal(lists, 1);
  t.same(lw.list().map((p) => p.metadata?.name), [`web-${node.nodeName}`]);

  // A raw watch from the list's version works now…
  const raw = await openWatch(`${node.url}/api/v1/namespaces/default/pods?watch=true&resourceVersion=${oldRV}`);
  t.equal(raw.status, 200);
  const getW = await Promise.all(
    ['1.27', '1.33'].map(async (v) => {
      const w = kubectlStream(await kubectlFor(t, v, node.url), 'get', 'pods', '-w', '-v=6');
      await w.waitFor(`kubectl ${v}: the list`, /^NAME\s+READY/m);
      // -v=6 logs each answer: the watch is established once its 200 is in.
      await w.waitFor(`kubectl ${v}: the watch`, /pods\?resourceVersion=\d+&watch=true"? (status="?)?200 OK/, 30_000, 0, 'stderr');
      return { v, w };
    }),
  );

  // …and nodelet stops: every watch ends cleanly, kubectl get -w exits.
  await node.stop();
  t.equal(await raw.ended, 'end', 'the raw watch saw a clean end of stream');
  // A clean end of the chunked body ends `kubectl get -w` quietly; a reset would make Go's transport
  // retry the request and kubectl fail with "connection refused".
  for (const { v, w } of getW) {
    const exit = await w.exited;
    t.equal(exit.code, 0, `kubectl ${v} get -w saw its watch end and exited cleanly`);
    t.notMatch(w.stderr, /error|refused|reset/i, `kubectl ${v}: no error`);
  }
  await node.waitFor('client-node noticed the server was gone', () => (errors.length > 0 ? true : undefined));

  await node.restart();
  t.equal(node.url, `http://127.0.0.1:${port}`);
  const stale = await openWatch(`${node.url}/api/v1/namespaces/default/pods?watch=true&resourceVersion=${oldRV}`);
  t.equal(stale.status, 410, 'a version from the previous process is too old');
  await stale.ended;
  t.match(JSON.parse(stale.body), { kind: 'Status', apiVersion: 'v1', status: 'Failure', reason: 'Expired', code: 410, message: new RegExp(`^too old resource version: ${oldRV} \\(\\d+\\)$`) });

  // client-node resumes from its last version, gets the 410, relists and watches from the new list.
  const resumedFrom = watchStarts.length;
  await lw.start();
  await node.waitFor('the relist and a new watch', () => (lists === 2 && watchStarts.length > resumedFrom + 1 ? true : undefined), 20_000);
  t.ok(watchEnds.some((e) => e?.statusCode === 410), 'client-node saw the 410');
  const newRV = Number(watchStarts.at(-1));
  t.ok(Number(watchStarts[resumedFrom]) >= Number(oldRV) && Number(watchStarts[resumedFrom]) < newRV, `it first tried its old version (${watchStarts[resumedFrom]})`);
  t.ok(newRV > Number(oldRV), `then watched from the new list (${newRV})`);
  t.same(lw.list().map((p) => p.metadata?.name), [`web-${node.nodeName}`], 'the cache holds the pod again');
});
