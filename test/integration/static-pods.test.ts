import t from 'tap';
import type { Pod, PodStatus } from '../../src/api/types.js';
import { BUSYBOX, containersOfNode, dockerCLI, testDocker } from '../helpers/docker.js';
import { startTestNode, type TestNode } from '../helpers/nodelet.js';
import { rfc3339 } from '../../src/api/time.js';
import { EVENTED_RELIST_PERIOD_MS } from '../../src/kubelet/pleg.js';

const docker = testDocker();

const manifest = (name: string, extra = '', command = '["sleep", "3600"]') => `apiVersion: v1
kind: Pod
metadata:
  name: ${name}
  labels: { app: ${name} }
spec:
  terminationGracePeriodSeconds: 1
  containers:
    - name: main
      image: ${BUSYBOX}
      imagePullPolicy: IfNotPresent
      command: ${command}
${extra}`;

const running = (pod: Pod | undefined) =>
  pod?.status?.phase === 'Running' && pod.status.containerStatuses?.every((c) => c.state?.running) ? pod : undefined;

async function runningPod(node: TestNode, name: string, namespace = 'default'): Promise<Pod> {
  return node.waitFor(`pod ${name} running`, async () => running(await node.pod(name, namespace)));
}

t.test('a dropped manifest runs as a sandbox plus containers with dockershim names and labels', async (t) => {
  const node = await startTestNode(t);
  await node.writeManifest('web.yaml', manifest('web', `    - name: side
      image: ${BUSYBOX}
      imagePullPolicy: Never
      command: ["sleep", "3600"]
      env: [{ name: GREETING, value: hello }]
      workingDir: /tmp
`));
  const pod = await runningPod(node, 'web');
  const uid = pod.metadata?.uid ?? '';
  t.equal(pod.metadata?.name, `web-${node.nodeName}`);
  t.equal(pod.metadata?.annotations?.['kubernetes.io/config.source'], 'file');
  t.equal(pod.metadata?.annotations?.['kubernetes.io/config.hash'], uid);
  t.equal(pod.status?.containerStatuses?.length, 2);
  t.match(pod.status?.containerStatuses?.[0]?.containerID, /^docker:\/\/[0-9a-f]{64}$/);
  t.equal(pod.status?.hostIP, '127.0.0.1');
  t.ok(pod.status?.startTime, 'start time set');
  t.equal(pod.status?.conditions?.find((c) => c.type === 'Ready')?.status, 'True');

  const list = await containersOfNode(docker, node.nodeName);
  const names = list.map((c) => c.Names[0]).sort();
  t.same(names, [
    `/k8s_POD_web-${node.nodeName}_default_${uid}_0`,
    `/k8s_main_web-${node.nodeName}_default_${uid}_0`,
    `/k8s_side_web-${node.nodeName}_default_${uid}_0`,
  ].sort());
  const sandbox = list.find((c) => c.Labels['io.kubernetes.docker.type'] === 'podsandbox');
  const side = list.find((c) => c.Labels['io.kubernetes.container.name'] === 'side');
  t.equal(sandbox?.Labels['io.kubernetes.container.name'], 'POD');
  t.equal(sandbox?.Labels['app'], 'web', 'pod labels copied onto the sandbox');
  t.equal(side?.Labels['io.kubernetes.pod.uid'], uid);
  t.equal(side?.Labels['io.kubernetes.pod.namespace'], 'default');
  t.equal(side?.Labels['io.kubernetes.sandbox.id'], sandbox?.Id);
  t.equal(side?.Labels['annotation.io.kubernetes.container.restartCount'], '0');
  t.equal(side?.Labels['annotation.io.kubernetes.container.terminationMessagePath'], '/dev/termination-log');
  t.match(side?.Labels['annotation.io.kubernetes.container.hash'], /^[0-9a-f]+$/);

  // Containers join the sandbox's network and IPC namespaces; spec fields reach Docker.
  const info = await docker.getContainer(side?.Id ?? '').inspect();
  t.equal(info.HostConfig.NetworkMode, `container:${sandbox?.Id}`);
  t.equal(info.HostConfig.IpcMode, `container:${sandbox?.Id}`);
  t.ok(info.Config.Env.includes('GREETING=hello'));
  t.equal(info.Config.WorkingDir, '/tmp');
  t.same(info.Config.Entrypoint, ['sleep', '3600']);

  // /podInfo serves the same cached status.
  const info2 = await node.get<PodStatus>(`/podInfo?podID=web-${node.nodeName}&podNamespace=default`);
  t.equal(info2.status, 200);
  t.equal(info2.body.phase, 'Running');
});

t.test('a killed container is seen at once and restarted with restartCount 1', async (t) => {
  const node = await startTestNode(t);
  await node.writeManifest('crash.yaml', manifest('crash'));
  const pod = await runningPod(node, 'crash');
  const id = pod.status?.containerStatuses?.[0]?.containerID?.replace('docker://', '') ?? '';
  const killedAt = Date.now();
  await dockerCLI('kill', id);
  const seen = await node.waitFor('kill reflected in status', async () => {
    const p = await node.pod('crash');
    const c = p?.status?.containerStatuses?.[0];
    return c && (c.state?.terminated || c.lastState?.terminated) ? Date.now() - killedAt : undefined;
  }, 10_000);
  t.comment(`kill reflected in the status after ${seen} ms`);
  t.ok(seen < 5000, 'reflected promptly (Docker events, not the periodic resync)');
  const restarted = await node.waitFor('restart', async () => {
    const p = await node.pod('crash');
    const c = p?.status?.containerStatuses?.[0];
    return c?.restartCount === 1 && c.state?.running ? c : undefined;
  });
  t.equal(restarted.lastState?.terminated?.exitCode, 137);
  t.not(restarted.containerID, `docker://${id}`);
  const names = (await containersOfNode(docker, node.nodeName)).map((c) => c.Names[0] ?? '');
  t.ok(names.some((n) => n.endsWith('_1') && n.startsWith('/k8s_main_')), 'attempt 1 created');
  t.ok(names.some((n) => n.endsWith('_0') && n.startsWith('/k8s_main_')), 'previous instance kept for logs');
});

t.test('restart policies: Never keeps a failed container down, OnFailure restarts it', async (t) => {
  const node = await startTestNode(t);
  const failing = (name: string, policy: string) => manifest(name, '', '["sh", "-c", "exit 3"]').replace('spec:\n', `spec:\n  restartPolicy: ${policy}\n`);
  await node.writeManifest('never.yaml', failing('never', 'Never'));
  await node.writeManifest('onfailure.yaml', failing('onfailure', 'OnFailure'));
  const never = await node.waitFor('Never pod failed', async () => {
    const p = await node.pod('never');
    return p?.status?.phase === 'Failed' ? p : undefined;
  });
  t.equal(never.status?.containerStatuses?.[0]?.state?.terminated?.exitCode, 3);
  t.equal(never.status?.containerStatuses?.[0]?.state?.terminated?.reason, 'Error');
  t.equal(never.status?.containerStatuses?.[0]?.restartCount, 0);
  const onFailure = await node.waitFor('OnFailure restarted', async () => {
    const p = await node.pod('onfailure');
    return (p?.status?.containerStatuses?.[0]?.restartCount ?? 0) >= 1 ? p : undefined;
  });
  t.equal(onFailure.status?.phase, 'Running', 'a pod that will restart stays Running');
  // Still not restarted: the Never pod has one instance only.
  const instances = (await containersOfNode(docker, node.nodeName)).filter((c) => c.Labels['io.kubernetes.pod.name'] === `never-${node.nodeName}` && c.Labels['io.kubernetes.docker.type'] === 'container');
  t.equal(instances.length, 1);
});

t.test('a changed manifest recreates the pod; a removed one removes its containers', async (t) => {
  const node = await startTestNode(t);
  await node.writeManifest('app.yaml', manifest('app'));
  const first = await runningPod(node, 'app');
  await node.writeManifest('app.yaml', manifest('app', '', '["sleep", "7200"]'));
  const second = await node.waitFor('recreated pod', async () => {
    const p = running(await node.pod('app'));
    return p && p.metadata?.uid !== first.metadata?.uid ? p : undefined;
  });
  const uids = async () => new Set((await containersOfNode(docker, node.nodeName)).map((c) => c.Labels['io.kubernetes.pod.uid']));
  await node.waitFor('old containers removed', async () => {
    const set = await uids();
    return set.size === 1 && set.has(second.metadata?.uid) ? true : undefined;
  });
  t.pass('only the new UID has containers');

  await node.removeManifest('app.yaml');
  await node.waitFor('containers removed', async () => ((await containersOfNode(docker, node.nodeName)).length === 0 ? true : undefined));
  await node.waitFor('pod gone from /pods', async () => ((await node.pod('app')) ? undefined : true));
  const gone = await node.get<string>(`/podInfo?podID=app-${node.nodeName}&podNamespace=default`);
  t.equal(gone.status, 404);
});

t.test('a restarted nodelet adopts its containers without duplicates, keeping restart counts', async (t) => {
  const node = await startTestNode(t);
  await node.writeManifest('keep.yaml', manifest('keep'));
  const pod = await runningPod(node, 'keep');
  const id = pod.status?.containerStatuses?.[0]?.containerID?.replace('docker://', '') ?? '';
  await dockerCLI('kill', id);
  await node.waitFor('restart', async () => ((await node.pod('keep'))?.status?.containerStatuses?.[0]?.restartCount === 1 ? true : undefined));
  const before = (await containersOfNode(docker, node.nodeName)).map((c) => c.Id).sort();
  const sandboxLabel = (await containersOfNode(docker, node.nodeName)).find((c) => c.Labels['io.kubernetes.docker.type'] === 'podsandbox')?.Labels['io.nodelet.pod.start-time'];
  t.equal(sandboxLabel && rfc3339(sandboxLabel), pod.status?.startTime, 'the sandbox records the start time first reported');
  await node.stop();
  await node.restart();
  const adopted = await node.waitFor('adopted', async () => {
    const p = running(await node.pod('keep'));
    return p?.status?.containerStatuses?.[0]?.restartCount === 1 ? p : undefined;
  });
  t.equal(adopted.metadata?.uid, pod.metadata?.uid);
  t.equal(adopted.status?.startTime, pod.status?.startTime, 'start time survives the restart');
  // Give the restarted loop a few relists to do anything wrong: counted, not timed (periodic ones
  // every EVENTED_RELIST_PERIOD_MS while the engine's event stream is up, as it is here).
  const relists = node.nodelet.kubelet.relistHealth().relists;
  await node.waitFor('two more relists', () => (node.nodelet.kubelet.relistHealth().relists >= relists + 2 ? true : undefined), 2 * EVENTED_RELIST_PERIOD_MS + 10_000);
  const after = (await containersOfNode(docker, node.nodeName)).map((c) => c.Id).sort();
  t.same(after, before, 'no container created or removed');
});

t.test('a broken manifest beside a good one leaves the good one running', async (t) => {
  const node = await startTestNode(t);
  await node.writeManifest('good.yaml', manifest('good'));
  await node.writeManifest('broken.yaml', 'apiVersion: v1\nkind: Pod\nmetadata: {name: [oops\n');
  await node.writeManifest('invalid.yaml', manifest('Invalid_Name'));
  await runningPod(node, 'good');
  const events = await node.get<{ items: { reason?: string; message?: string }[] }>('/api/v1/events');
  t.ok(events.body.items.some((e) => e.reason === 'FailedValidation' && /broken\.yaml/.test(e.message ?? '')), 'syntax error recorded as an event');
  t.ok(events.body.items.some((e) => e.reason === 'FailedValidation' && /Invalid_Name/.test(e.message ?? '')), 'invalid pod recorded as an event');
  const names = (await containersOfNode(docker, node.nodeName)).map((c) => c.Labels['io.kubernetes.pod.name']);
  t.ok(names.every((n) => n === `good-${node.nodeName}`), 'only the good pod has containers');
});

t.test('huge manifests are refused once with an event, never retried against Docker', async (t) => {
  const node = await startTestNode(t);
  const kib = 'v'.repeat(1024);
  const annotations = (n: number) => `  annotations:\n${Array.from({ length: n }, (_, i) => `    a${i}: ${kib}\n`).join('')}`;
  const withAnnotations = (name: string, n: number) => manifest(name).replace(`  labels: { app: ${name} }\n`, `  labels: { app: ${name} }\n${annotations(n)}`);
  // A 9 MiB manifest (9,000 annotations of 1 KB), and one under the file cap whose 300 KiB of annotations is not.
  await node.writeManifest('huge.yaml', withAnnotations('huge', 9000));
  await node.writeManifest('annotated.yaml', withAnnotations('annotated', 300));
  await node.writeManifest('good.yaml', manifest('good'));
  await runningPod(node, 'good');
  type Ev = { reason?: string; message?: string; count?: number };
  const events = async () => (await node.get<{ items: Ev[] }>('/api/v1/events')).body.items;
  const refusals = async () => {
    const all = await events();
    const huge = all.filter((e) => e.reason === 'FailedValidation' && /huge\.yaml.*manifest is larger than 1572864 bytes/.test(e.message ?? ''));
    const annotated = all.filter((e) => e.reason === 'FailedValidation' && /annotated-.*metadata\.annotations: Too long: must have at most 262144 bytes/.test(e.message ?? ''));
    return huge.length === 1 && annotated.length === 1 ? { huge: huge[0]!, annotated: annotated[0]!, all } : undefined;
  };
  await node.waitFor('both refusals recorded', refusals);
  const rss = process.memoryUsage().rss;
  // Several rescans, each reading the huge manifests again: still refused once, and Docker never
  // asked. Each rescan is proven rather than waited for: a new broken marker file draws an event
  // of its own only from a scan that read it.
  for (let scan = 1; scan <= 3; scan++) {
    await node.writeManifest(`rescan-${scan}.yaml`, 'apiVersion: v1\nkind: Pod\nmetadata: {name: [oops\n');
    await node.waitFor(`rescan ${scan}`, async () =>
      (await events()).some((e) => e.reason === 'FailedValidation' && e.message?.includes(`rescan-${scan}.yaml`)) ? true : undefined,
    );
    const r = await refusals();
    if (!r) return t.fail('the refusals changed');
    if (r.huge.count !== 1 || r.annotated.count !== 1) return t.fail(`refused again: ${r.huge.count}, ${r.annotated.count}`);
    const sandboxFailures = r.all.filter((e) => /Sandbox|FailedCreate/.test(e.reason ?? ''));
    if (sandboxFailures.length > 0) return t.fail(`a sandbox was attempted: ${JSON.stringify(sandboxFailures[0]).slice(0, 300)}`);
  }
  const names = (await containersOfNode(docker, node.nodeName)).map((c) => c.Labels['io.kubernetes.pod.name']);
  t.ok(names.length > 0 && names.every((n) => n === `good-${node.nodeName}`), 'only the good pod has containers');
  t.equal(await node.pod('huge'), undefined, 'the refused pods are not served');
  t.equal(await node.pod('annotated'), undefined);
  t.pass(`refused once each; RSS ${Math.round(rss / 2 ** 20)} MiB then ${Math.round(process.memoryUsage().rss / 2 ** 20)} MiB over the rescans`);
});

t.test('a missing image with pull policy Never waits with ErrImageNeverPull', async (t) => {
  const node = await startTestNode(t);
  await node.writeManifest('noimage.yaml', manifest('noimage').replace(`image: ${BUSYBOX}\n      imagePullPolicy: IfNotPresent`, 'image: nodelet.local/absent:1\n      imagePullPolicy: Never'));
  const waiting = await node.waitFor('waiting state', async () => {
    const c = (await node.pod('noimage'))?.status?.containerStatuses?.[0];
    return c?.state?.waiting?.reason === 'ErrImageNeverPull' ? c : undefined;
  });
  t.equal((await node.pod('noimage'))?.status?.phase, 'Pending');
  t.match(waiting.state?.waiting?.message, /not present with pull policy of Never/);
});

t.test('healthz fails while the Docker engine is unreachable', async (t) => {
  const node = await startTestNode(t, { dockerEndpoint: 'unix:///nonexistent/docker.sock' });
  const res = await node.waitFor('unhealthy', async () => {
    const r = await node.get<string>('/healthz');
    return r.status === 500 ? r : undefined;
  }, 10_000);
  t.match(res.body, /\[-\]syncloop failed/);
  const one = await node.get<string>('/healthz/syncloop');
  t.equal(one.status, 500);
});

t.test('two manifests with one metadata.uid: the running pod keeps running, the newcomer gets a FailedValidation event', async (t) => {
  const node = await startTestNode(t);
  const uid = '0123456789abcdef0123456789abcdef';
  const withUID = (name: string) => manifest(name).replace(`  name: ${name}\n`, `  name: ${name}\n  uid: ${uid}\n`);
  await node.writeManifest('b-first.yaml', withUID('first'));
  const first = await runningPod(node, 'first');
  t.equal(first.metadata?.uid, uid);
  const containerIDs = async () => (await containersOfNode(docker, node.nodeName)).map((c) => `${c.Labels['io.kubernetes.pod.name']}/${c.Id}`).sort();
  const before = await containerIDs();
  // A copy sorting earlier claims the same UID.
  await node.writeManifest('a-copy.yaml', withUID('copy'));
  type Ev = { reason?: string; message?: string; involvedObject?: { name?: string } };
  const event = await node.waitFor('the copy refused', async () =>
    (await node.get<{ items: Ev[] }>('/api/v1/events')).body.items.find((e) => e.reason === 'FailedValidation' && e.involvedObject?.name === `copy-${node.nodeName}`),
  );
  t.equal(event.message, `Error validating pod copy-${node.nodeName}.default from file, ignoring: metadata.uid: Duplicate value: "${uid}"`);
  // Proven rescans later (a marker file drawing its own event), the first pod is untouched.
  await node.writeManifest('marker.yaml', 'apiVersion: v1\nkind: Pod\nmetadata: {name: [oops\n');
  await node.waitFor('a rescan', async () => ((await node.get<{ items: Ev[] }>('/api/v1/events')).body.items.some((e) => e.message?.includes('marker.yaml')) ? true : undefined));
  const still = await runningPod(node, 'first');
  t.equal(still.metadata?.uid, uid);
  t.equal(still.status?.containerStatuses?.[0]?.restartCount, 0);
  t.same(await containerIDs(), before, 'the same containers, none for the copy');
  t.equal(await node.pod('copy'), undefined);
});

t.test('a manifest with a string status.conditions: its status is dropped, /api/v1/pods and its tables still answer', async (t) => {
  const node = await startTestNode(t);
  await node.writeManifest('status.yaml', `${manifest('withstatus')}status:\n  phase: Succeeded\n  conditions: Ready\n  podIP: 6.6.6.6\n`);
  await node.writeManifest('good.yaml', manifest('good'));
  const pod = await runningPod(node, 'withstatus');
  t.not(pod.status?.podIP, '6.6.6.6', 'the file\'s status is not served');
  t.ok(Array.isArray(pod.status?.conditions), 'conditions are nodelet\'s list');
  await runningPod(node, 'good');
  for (const path of ['/api/v1/pods', '/api/v1/namespaces/default/pods', '/pods']) {
    const res = await node.get<{ items: Pod[] }>(path);
    t.equal(res.status, 200, path);
    t.equal(res.body.items.length, 2, `${path}: both pods`);
  }
  const table = await fetch(`${node.url}/api/v1/namespaces/default/pods`, { headers: { accept: 'application/json;as=Table;v=v1;g=meta.k8s.io,application/json' } });
  t.equal(table.status, 200);
  const body = (await table.json()) as { kind?: string; rows?: { cells: unknown[] }[] };
  t.equal(body.kind, 'Table');
  t.same(body.rows?.map((r) => r.cells[2]).sort(), ['Running', 'Running'], 'kubectl get pods shows both Running');
});

t.test('a 2.7 MB manifest of env entries is refused unparsed with a clear reason; a 1.4 MB one runs (no 431 from Docker); RSS stays bounded', async (t) => {
  const node = await startTestNode(t);
  const envManifest = (name: string, bytes: number, valueLength: number) => {
    let out = `${manifest(name)}      env:\n`;
    for (let i = 0; out.length < bytes; i++) out += `        - name: VAR_${i}\n          value: "${'x'.repeat(valueLength)}"\n`;
    return out;
  };
  const rss0 = process.memoryUsage().rss;
  await node.writeManifest('huge-env.yaml', envManifest('hugeenv', 2_700_000, 40));
  await node.writeManifest('big-env.yaml', envManifest('bigenv', 1_400_000, 200));
  type Ev = { reason?: string; message?: string; count?: number };
  const events = async () => (await node.get<{ items: Ev[] }>('/api/v1/events')).body.items;
  const refusal = await node.waitFor('the huge manifest refused', async () => (await events()).find((e) => e.reason === 'FailedValidation' && e.message?.includes('huge-env.yaml')));
  t.match(refusal.message, /huge-env\.yaml: manifest is larger than 1572864 bytes \(the largest object etcd stores\), refused unparsed/);
  // 1.4 MB of manifest, 1.2 MB of env in the container config: Docker was sent it in the query
  // string as well before, past its 1 MiB header limit (431 on every retry).
  await runningPod(node, 'bigenv');
  const [main] = (await containersOfNode(docker, node.nodeName)).filter((c) => c.Labels['io.kubernetes.pod.name'] === `bigenv-${node.nodeName}` && c.Labels['io.kubernetes.container.name'] === 'main');
  const env = (await docker.getContainer(main!.Id).inspect()).Config.Env ?? [];
  const vars = env.filter((e) => e.startsWith('VAR_'));
  const bytes = vars.reduce((n, e) => n + e.length, 0);
  t.ok(vars.length > 5000 && bytes > 2 ** 20, `${vars.length} env entries, ${bytes} bytes, in the container`);
  // Rescans, each proven: the huge file is refused once, never parsed, never sent to Docker.
  for (let scan = 1; scan <= 3; scan++) {
    await node.writeManifest(`rescan-${scan}.yaml`, 'apiVersion: v1\nkind: Pod\nmetadata: {name: [oops\n');
    await node.waitFor(`rescan ${scan}`, async () => ((await events()).some((e) => e.message?.includes(`rescan-${scan}.yaml`)) ? true : undefined));
  }
  const all = await events();
  t.equal(all.filter((e) => e.message?.includes('huge-env.yaml')).length, 1);
  t.equal(all.find((e) => e.message?.includes('huge-env.yaml'))?.count, 1, 'reported once');
  t.equal(await node.pod('hugeenv'), undefined);
  t.notOk(all.some((e) => /Failed|BackOff/.test(e.reason ?? '') && e.reason !== 'FailedValidation'), 'no failed creates');
  const grown = (process.memoryUsage().rss - rss0) / 2 ** 20;
  t.ok(grown < 300, `RSS grew ${Math.round(grown)} MiB (the 1.4 MB manifest parsed once)`);
});
