import t from 'tap';
import type { Lease } from 'kubernetes-types/coordination/v1.js';
import type { Pod } from 'kubernetes-types/core/v1.js';
import type { Node } from '../../src/api/types.js';
import { ApiError, KubeClient } from '../../src/apiserver/client.js';
import { loadKubeconfig } from '../../src/config/kubeconfig.js';
import { ConfigHashAnnotationKey, ConfigMirrorAnnotationKey } from '../../src/api/annotations.js';
import { startControlPlane } from '../helpers/control-plane.js';
import { controlPlaneMinor } from '../helpers/k8s-pin.js';
import { startClusterNode } from '../helpers/cluster-node.js';
import { waitFor } from '../helpers/wait.js';

/**
 * nodelet as a node of a real control plane (etcd, kube-apiserver, controller-manager and
 * scheduler of the pinned release (v1.37), built from their Go modules): registration, lease, scheduled pods, status
 * sync, mirror pods, graceful deletion, NodeRestriction, restart and adoption.
 */
t.setTimeout(300_000);

const cp = await startControlPlane(t);
const admin = new KubeClient(loadKubeconfig(cp.adminKubeconfig));
t.teardown(() => admin.close());
const node = await startClusterNode(t, cp, {}, {});
const nodeName = node.nodeName;

const api = <T>(path: string) => admin.request<T>('GET', path);
const podPath = (name: string, ns = 'default') => `/api/v1/namespaces/${ns}/pods/${name}`;
async function apply(pod: Pod): Promise<Pod> {
  return admin.request<Pod>('POST', `/api/v1/namespaces/${pod.metadata?.namespace ?? 'default'}/pods`, { body: pod });
}
const getPod = (name: string) => api<Pod>(podPath(name)).catch((err: unknown) => (err instanceof ApiError && err.code === 404 ? undefined : Promise.reject(err)));

const busybox = 'nodelet.local/busybox:1.35';
function podOf(name: string, command: string, extra: Partial<NonNullable<Pod['spec']>> = {}): Pod {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name },
    spec: { automountServiceAccountToken: false, containers: [{ name: 'main', image: busybox, command: ['sh', '-c', command] }], ...extra },
  };
}

t.test('the Node registers Ready with the facts a kubelet reports, and its Lease renews', async (t) => {
  const n = await node.waitFor('node Ready', async () => {
    const got = await api<Node>(`/api/v1/nodes/${nodeName}`).catch(() => undefined);
    return got?.status?.conditions?.find((c) => c.type === 'Ready')?.status === 'True' ? got : undefined;
  });
  const ready = n.status?.conditions?.find((c) => c.type === 'Ready');
  t.equal(ready?.reason, 'KubeletReady');
  t.same(
    ['MemoryPressure', 'DiskPressure', 'PIDPressure'].map((type) => n.status?.conditions?.find((c) => c.type === type)?.status),
    ['False', 'False', 'False'],
  );
  t.equal(n.metadata?.labels?.['kubernetes.io/hostname'], nodeName);
  t.equal(n.metadata?.labels?.['kubernetes.io/os'], 'linux');
  t.match(n.status?.nodeInfo?.containerRuntimeVersion, /^docker:\/\/\d+\.\d+/);
  t.match(n.status?.nodeInfo?.kubeletVersion, /^v1\.\d+\.\d+/);
  t.same(n.status?.addresses?.find((a) => a.type === 'InternalIP')?.address, '127.0.0.1');
  t.equal(n.status?.daemonEndpoints?.kubeletEndpoint?.Port, Number(new URL(node.url).port), 'the apiserver dials the port nodelet serves');
  for (const r of ['cpu', 'memory', 'pods', 'ephemeral-storage']) t.ok(n.status?.allocatable?.[r], `allocatable ${r}`);
  t.ok((n.status?.images ?? []).some((i) => i.names?.includes(busybox)), 'images listed');
  // NodeDeclaredFeatures is on from 1.36 (alpha, off, in 1.35): an older apiserver drops the field.
  t.same(n.status?.declaredFeatures, Number(controlPlaneMinor().split('.')[1]) >= 36 ? ['ExtendWebSocketsToKubelet', 'InPlacePodLevelResourcesVerticalScaling', 'InPlacePodVerticalScalingInitContainers', 'RestartAllContainersOnContainerExits'] : undefined, 'declared features as the apiserver holds them');

  const first = await node.waitFor('lease', () => api<Lease>(`/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/${nodeName}`));
  t.equal(first.spec?.holderIdentity, nodeName);
  t.equal(first.spec?.leaseDurationSeconds, 40);
  t.match(first.spec?.renewTime, /\.\d{6}Z$/, 'renewTime is a MicroTime');
  const owner = await node.waitFor('lease owned by the Node', async () => {
    const l = await api<Lease>(`/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/${nodeName}`);
    return l.metadata?.ownerReferences?.find((o) => o.kind === 'Node');
  });
  t.equal(owner.uid, n.metadata?.uid);
});

t.test('a pod the scheduler places runs, and the apiserver shows the statuses nodelet serves', async (t) => {
  await apply(podOf('sched', 'echo started; sleep 3600'));
  const running = await node.waitFor('pod Running on the apiserver', async () => {
    const p = await getPod('sched');
    return p?.status?.phase === 'Running' && p.status.conditions?.find((c) => c.type === 'Ready')?.status === 'True' ? p : undefined;
  }, 60_000);
  t.equal(running.spec?.nodeName, nodeName, 'the real scheduler bound it to nodelet');
  const local = await node.getLocal<{ items: Pod[] }>('/pods');
  const mine = local.body.items.find((p) => p.metadata?.uid === running.metadata?.uid);
  t.ok(mine, 'nodelet serves the pod locally');
  const pick = (p: Pod | undefined) => (p?.status?.containerStatuses ?? []).map((s) => ({ name: s.name, id: s.containerID, state: s.state, ready: s.ready, restarts: s.restartCount, image: s.image }));
  t.same(pick(running), pick(mine), 'container statuses agree');
  t.equal(running.status?.startTime, mine?.status?.startTime);
  t.equal(running.status?.hostIP, '127.0.0.1');
});

t.test('a static pod gets a mirror pod owned by the Node; a deleted mirror pod comes back', async (t) => {
  await node.writeManifest('static.yaml', `apiVersion: v1\nkind: Pod\nmetadata: { name: stat }\nspec:\n  containers:\n  - name: main\n    image: ${busybox}\n    command: [sh, -c, "sleep 3600"]\n`);
  const name = `stat-${nodeName}`;
  const mirror = await node.waitFor('mirror pod Running', async () => {
    const p = await getPod(name);
    return p?.status?.phase === 'Running' ? p : undefined;
  }, 60_000);
  const n = await api<Node>(`/api/v1/nodes/${nodeName}`);
  const local = (await node.getLocal<{ items: Pod[] }>('/pods')).body.items.find((p) => p.metadata?.name === name);
  t.ok(local, 'the static pod runs');
  t.equal(mirror.metadata?.annotations?.[ConfigMirrorAnnotationKey], local?.metadata?.annotations?.[ConfigHashAnnotationKey], 'annotated with the config hash');
  t.same(mirror.metadata?.ownerReferences, [{ apiVersion: 'v1', kind: 'Node', name: nodeName, uid: n.metadata?.uid, controller: true }]);
  t.not(mirror.metadata?.uid, local?.metadata?.uid, 'the mirror pod has its own UID');

  // Routes that take a pod UID accept the mirror pod's (TranslatePodUID).
  const run = await node.requestLocal('POST', `/run/default/${name}/${mirror.metadata?.uid}/main?cmd=echo%20via-mirror-uid`);
  t.equal(run.status, 200);
  t.match(run.body, /via-mirror-uid/);

  await admin.request('DELETE', podPath(name), { body: { gracePeriodSeconds: 0 } });
  const again = await node.waitFor('mirror pod recreated', async () => {
    const p = await getPod(name);
    return p && p.metadata?.uid !== mirror.metadata?.uid && !p.metadata?.deletionTimestamp ? p : undefined;
  }, 30_000);
  t.equal(again.metadata?.annotations?.[ConfigMirrorAnnotationKey], mirror.metadata?.annotations?.[ConfigMirrorAnnotationKey]);
  const stillLocal = (await node.getLocal<{ items: Pod[] }>('/pods')).body.items.find((p) => p.metadata?.name === name);
  t.equal(stillLocal?.status?.containerStatuses?.[0]?.containerID, local?.status?.containerStatuses?.[0]?.containerID, 'deleting the mirror pod does not touch the static pod');

  await node.removeManifest('static.yaml');
  await node.waitFor('mirror pod removed with its manifest', async () => ((await getPod(name)) === undefined ? true : undefined), 30_000);
});

t.test('kubectl delete: SIGTERM reaches the container, the grace period is respected, then the object goes', async (t) => {
  await apply(podOf('polite', "trap 'echo got-TERM; exit 0' TERM; while true; do sleep 0.2; done", { terminationGracePeriodSeconds: 30 }));
  await apply(podOf('stubborn', "trap '' TERM; while true; do sleep 0.2; done", { terminationGracePeriodSeconds: 4 }));
  for (const name of ['polite', 'stubborn']) {
    await node.waitFor(`${name} Running`, async () => ((await getPod(name))?.status?.phase === 'Running' ? true : undefined), 60_000);
  }
  // Watch every change the apiserver records: the terminal status must land before the delete.
  const list = await api<{ metadata?: { resourceVersion?: string } }>('/api/v1/namespaces/default/pods');
  const terminated = new Map<string, { exitCode?: number; at: number }>();
  const deleted = new Map<string, number>();
  const abort = new AbortController();
  t.teardown(() => abort.abort());
  let started = 0;
  const watching = admin
    .watch<Pod>(`/api/v1/namespaces/default/pods?watch=1&resourceVersion=${list.metadata?.resourceVersion}`, (ev) => {
      const name = ev.object.metadata?.name ?? '';
      const term = ev.object.status?.containerStatuses?.[0]?.state?.terminated;
      if (term && !terminated.has(name)) terminated.set(name, { exitCode: term.exitCode, at: Date.now() - started });
      if (ev.type === 'DELETED') deleted.set(name, Date.now() - started);
    }, { signal: abort.signal, idleTimeoutMs: 120_000 })
    .catch(() => undefined);
  started = Date.now();
  await Promise.all(['polite', 'stubborn'].map((name) => admin.request('DELETE', podPath(name))));
  await node.waitFor('both objects gone', () => (deleted.has('polite') && deleted.has('stubborn') ? true : undefined), 60_000);
  abort.abort();
  await watching;
  t.equal(terminated.get('polite')?.exitCode, 0, 'the container handled SIGTERM (exit 0 from its trap)');
  t.ok((deleted.get('polite') ?? Infinity) < 3_000, `a container that exits on SIGTERM stops at once (${deleted.get('polite')} ms)`);
  t.ok((terminated.get('polite')?.at ?? Infinity) <= (deleted.get('polite') ?? 0), 'terminal status before deletion');
  const stubborn = terminated.get('stubborn');
  t.equal(stubborn?.exitCode, 137, 'a container ignoring SIGTERM is killed');
  t.ok((stubborn?.at ?? 0) >= 4_000 && (stubborn?.at ?? Infinity) < 20_000, `killed after its 4 s grace period (at ${stubborn?.at} ms)`);
  t.ok((deleted.get('stubborn') ?? 0) >= (stubborn?.at ?? Infinity), 'deleted after its terminal status');
  await node.waitFor('gone locally too', async () => {
    const names = (await node.getLocal<{ items: Pod[] }>('/pods')).body.items.map((p) => p.metadata?.name);
    return names.includes('polite') || names.includes('stubborn') ? undefined : true;
  });
});

t.test('secrets, configMaps and the service-account token reach the container', async (t) => {
  await admin.request('POST', '/api/v1/namespaces/default/secrets', { body: { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'creds' }, stringData: { password: 'hunter2' } } });
  await admin.request('POST', '/api/v1/namespaces/default/configmaps', { body: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'settings' }, data: { greeting: 'hello' } } });
  const pod: Pod = {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: 'mounts' },
    spec: {
      containers: [
        {
          name: 'main',
          image: busybox,
          command: ['sh', '-c', 'cat /etc/creds/password; echo; cat /etc/settings/greeting; echo; echo "env=$PW/$GREETING"; sleep 3600'],
          env: [
            { name: 'PW', valueFrom: { secretKeyRef: { name: 'creds', key: 'password' } } },
            { name: 'GREETING', valueFrom: { configMapKeyRef: { name: 'settings', key: 'greeting' } } },
          ],
          volumeMounts: [
            { name: 'creds', mountPath: '/etc/creds', readOnly: true },
            { name: 'settings', mountPath: '/etc/settings' },
          ],
        },
      ],
      volumes: [
        { name: 'creds', secret: { secretName: 'creds' } },
        { name: 'settings', configMap: { name: 'settings' } },
      ],
    },
  };
  const created = await apply(pod);
  t.ok(created.spec?.volumes?.some((v) => v.name.startsWith('kube-api-access-') && v.projected), 'the ServiceAccount admission plugin added the projected token volume');
  await node.waitFor('mounts Running', async () => ((await getPod('mounts'))?.status?.phase === 'Running' ? true : undefined), 60_000);
  const logs = await node.waitFor('logs through the apiserver', async () => {
    const out = (await cp.kubectl(['logs', 'mounts'])).stdout;
    return out.includes('env=') ? out : undefined;
  });
  t.match(logs, /hunter2\nhello\nenv=hunter2\/hello/, 'secret and configMap files and env');

  const sa = '/var/run/secrets/kubernetes.io/serviceaccount';
  const read = async (file: string) => {
    const res = await node.requestLocal('POST', `/run/default/mounts/main?cmd=${encodeURIComponent(`cat ${sa}/${file}`)}`);
    t.equal(res.status, 200, `read ${file}`);
    return res.body;
  };
  const token = (await read('token')).trim();
  t.equal((await read('namespace')).trim(), 'default');
  const { readFile } = await import('node:fs/promises');
  t.equal((await read('ca.crt')).trim(), (await readFile(cp.caFile, 'utf8')).trim(), 'kube-root-ca.crt holds the cluster CA');
  const review = await admin.request<{ status?: { authenticated?: boolean; user?: { username?: string; extra?: Record<string, string[]> } } }>('POST', '/apis/authentication.k8s.io/v1/tokenreviews', {
    body: { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenReview', spec: { token } },
  });
  t.equal(review.status?.authenticated, true, 'a TokenReview accepts the mounted token');
  t.equal(review.status?.user?.username, 'system:serviceaccount:default:default');
  t.same(review.status?.user?.extra?.['authentication.kubernetes.io/pod-name'], ['mounts'], 'the token is bound to the pod');
  await admin.request('DELETE', podPath('mounts'), { body: { gracePeriodSeconds: 0 } });
});

t.test('service environment variables: the namespace\'s services and kubernetes; enableServiceLinks: false keeps only kubernetes', async (t) => {
  const svc = await admin.request<{ spec?: { clusterIP?: string } }>('POST', '/api/v1/namespaces/default/services', {
    body: { apiVersion: 'v1', kind: 'Service', metadata: { name: 'fooservice' }, spec: { selector: { app: 'none' }, ports: [{ name: 'web', port: 8765, targetPort: 8080 }] } },
  });
  t.match(svc.spec?.clusterIP, /^\d+\.\d+\.\d+\.\d+$/, 'the apiserver gave the service a cluster IP');
  const printEnv = 'env | grep -E "^(FOOSERVICE|KUBERNETES)_" | sort; echo done; sleep 3600';
  await apply(podOf('linked', printEnv));
  await apply(podOf('unlinked', printEnv, { enableServiceLinks: false }));
  const logsOf = (name: string) => node.waitFor(`${name} logs`, async () => {
    const out = (await cp.kubectl(['logs', name])).stdout;
    return out.includes('done') ? out : undefined;
  }, 60_000);
  const linked = await logsOf('linked');
  t.match(linked, new RegExp(`^FOOSERVICE_SERVICE_HOST=${svc.spec?.clusterIP}$`, 'm'));
  t.match(linked, /^FOOSERVICE_SERVICE_PORT_WEB=8765$/m);
  t.match(linked, new RegExp(`^FOOSERVICE_PORT_8765_TCP=tcp://${svc.spec?.clusterIP}:8765$`, 'm'));
  t.match(linked, /^KUBERNETES_SERVICE_PORT=\d+$/m, 'the kubernetes service too');
  const unlinked = await logsOf('unlinked');
  t.notMatch(unlinked, /FOOSERVICE/, 'no links to the namespace\'s services');
  t.match(unlinked, /^KUBERNETES_SERVICE_HOST=/m, 'kubernetes is always there');
  for (const name of ['linked', 'unlinked']) await admin.request('DELETE', podPath(name), { body: { gracePeriodSeconds: 0 } });
  await admin.request('DELETE', '/api/v1/namespaces/default/services/fooservice');
});

t.test('NodeRestriction: the node cannot read a secret no pod on it uses', async (t) => {
  await admin.request('POST', '/api/v1/namespaces/default/secrets', { body: { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'unrelated' }, stringData: { k: 'v' } } });
  const asNode = new KubeClient(loadKubeconfig(await cp.nodeKubeconfig(nodeName)));
  t.teardown(() => asNode.close());
  const err = await asNode.request('GET', '/api/v1/namespaces/default/secrets/unrelated').then(() => undefined, (e: unknown) => e);
  t.ok(err instanceof ApiError && err.code === 403, `403 Forbidden (got ${String(err)})`);
});

t.test('nodelet stopped: the node goes NotReady; back: Ready again, pods adopted with restart counts and start times', async (t) => {
  await apply(podOf('keeper', 'sleep 3600'));
  const before = await node.waitFor('keeper Running', async () => {
    const p = await getPod('keeper');
    return p?.status?.phase === 'Running' ? p : undefined;
  }, 60_000);
  await node.stop();
  await node
    .waitFor('node NotReady', async () => {
      const n = await api<Node>(`/api/v1/nodes/${nodeName}`);
      return n.status?.conditions?.find((c) => c.type === 'Ready')?.status === 'Unknown' ? true : undefined;
    }, 60_000)
    .catch(async (err: unknown) => {
      // What the node lifecycle controller was doing, for the record.
      const { readFile } = await import('node:fs/promises');
      const kcm = await readFile(`${cp.dir}/kube-controller-manager.log`, 'utf8').catch(() => '');
      t.comment(kcm.split('\n').filter((l) => /node_lifecycle|NodeNotReady|disruption|Unknown/i.test(l)).slice(-30).join('\n'));
      throw err;
    });
  await node.restart();
  await node.waitFor('node Ready again', async () => {
    const n = await api<Node>(`/api/v1/nodes/${nodeName}`);
    return n.status?.conditions?.find((c) => c.type === 'Ready')?.status === 'True' ? true : undefined;
  }, 60_000);
  const after = await node.waitFor('keeper reported again', async () => {
    const p = await getPod('keeper');
    return p?.status?.conditions?.find((c) => c.type === 'Ready')?.status === 'True' ? p : undefined;
  }, 30_000);
  t.equal(after.status?.startTime, before.status?.startTime, 'start time kept');
  t.equal(after.status?.containerStatuses?.[0]?.containerID, before.status?.containerStatuses?.[0]?.containerID, 'the same container, adopted');
  t.equal(after.status?.containerStatuses?.[0]?.restartCount, before.status?.containerStatuses?.[0]?.restartCount, 'restart count kept');
});

t.test('the apiserver away: nodelet keeps serving; when it returns it holds exactly the newest statuses', async (t) => {
  await apply(podOf('flappy', 'sleep 2; exit 1', { restartPolicy: 'Always' }));
  const before = await node.waitFor('flappy running on the apiserver', async () => ((await getPod('flappy'))?.status?.phase === 'Running' ? await getPod('flappy') : undefined), 60_000);
  const uid = before?.metadata?.uid ?? '';
  const restartsOf = (pods: Pod[]) => pods.find((p) => p.metadata?.uid === uid)?.status?.containerStatuses?.[0]?.restartCount ?? 0;
  // Reading /pods is authorized by a SubjectAccessReview: made (and cached, 5 min) before the
  // outage, as any client that was already reading gets; a new one would get 500 meanwhile.
  const atStart = await node.getLocal<{ items: Pod[] }>('/pods');
  t.equal(atStart.status, 200);
  const restartsBefore = restartsOf(atStart.body.items);
  await cp.stopApiserver();
  // The outage lasts until the container restarted twice with the apiserver away (a restart
  // every ~4-6 s here), or at least NODELET_OUTAGE_MS; nodelet must answer /pods all along.
  const minOutageEnd = Date.now() + Number(process.env.NODELET_OUTAGE_MS ?? 0);
  const refused: string[] = [];
  /** The restart count nodelet last served during the outage. */
  let seenDuring = restartsBefore;
  await waitFor(
    'two restarts with the apiserver away',
    async () => {
      const local = await node.getLocal<{ items: Pod[] }>('/pods').catch((err: unknown) => ({ status: String(err), body: { items: [] } }));
      if (local.status !== 200) refused.push(String(local.status));
      else seenDuring = restartsOf(local.body.items);
      return seenDuring - restartsBefore >= 2 && Date.now() >= minOutageEnd ? true : undefined;
    },
    60_000 + Number(process.env.NODELET_OUTAGE_MS ?? 0),
    500,
  );
  t.same(refused, [], 'nodelet served /pods throughout the outage');
  t.pass(`the container kept restarting while the apiserver was away (${restartsBefore} → ${seenDuring})`);
  await cp.startApiserver();
  // Stop the churn so "newest" is well defined, then compare.
  await node.waitFor('apiserver shows the newest status', async () => {
    const remote = await getPod('flappy');
    const local = (await node.getLocal<{ items: Pod[] }>('/pods')).body.items.find((p) => p.metadata?.uid === uid);
    const r = remote?.status?.containerStatuses?.[0];
    const l = local?.status?.containerStatuses?.[0];
    return r && l && r.restartCount === l.restartCount && r.containerID === l.containerID && r.restartCount >= seenDuring ? true : undefined;
  }, 30_000);
  t.pass('statuses converged');
  await admin.request('DELETE', podPath('flappy'), { body: { gracePeriodSeconds: 0 } });
});
