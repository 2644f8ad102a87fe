/**
 * Pod statuses under load and through an apiserver outage — pods changing state at once without
 * the status manager falling behind (the freshness figure) or growing — against a real control plane (scripts/control-plane.sh):
 * - a storm: every pod of a batch finishes at the same instant (they wait on one file of a shared
 *   hostPath); the apiserver shows each Succeeded within a bound (the freshness figure), with at
 *   most a few status patches per pod, never going back, and nodelet's heap flat;
 * - an outage: kube-apiserver stopped while a batch finishes; nodelet keeps working (local /pods
 *   shows them Succeeded, /healthz answers), holds one status per pod, and once the apiserver is
 *   back sends each pod's newest status once.
 * nodelet runs in-process (its status sync's patch count and its heap are read directly), with
 * AlwaysAllow authorization so that its own API stays readable while the apiserver is away.
 */
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import t from 'tap';
import type { Pod, PodList } from 'kubernetes-types/core/v1.js';
import { KubeClient, query } from '../../src/apiserver/client.js';
import { loadKubeconfig } from '../../src/config/kubeconfig.js';
import { startClusterNode } from '../helpers/cluster-node.js';
import { startControlPlane } from '../helpers/control-plane.js';
import { BUSYBOX } from '../helpers/docker.js';
import { Semaphore, figures, mib, percentile, poll, range, round, settledHeap, sized, stopwatch } from '../helpers/soak.js';

const PODS = sized({ ci: 40, full: 300 });
const START_MS = sized({ ci: 180_000, full: 900_000 });
/** Every pod of a storm shows Succeeded in the apiserver within this. */
const FRESH_MS = sized({ ci: 30_000, full: 120_000 });
/** How long the apiserver stays away (at least; and until every pod finished locally). */
const OUTAGE_MS = sized({ ci: 15_000, full: 300_000 });
/** After the apiserver returns: every newest status delivered within this (back-off ≤ 30 s, plus a resync). */
const RECOVER_MS = 90_000;

const cp = await startControlPlane(t);
// AlwaysAllow: with the apiserver away the SubjectAccessReview webhook would refuse (fail closed)
// every local request, and the outage case reads nodelet's own /pods meanwhile. x509 still applies.
// maxPods: a batch's pods are bound to the node directly, and admission counts them against it.
const node = await startClusterNode(t, cp, { authorizationMode: 'AlwaysAllow', maxPods: Math.max(110, PODS + 10) });
const sync = node.nodelet.cluster!.statusSync;
const client = new KubeClient(loadKubeconfig(cp.adminKubeconfig), { maxSockets: 16, userAgent: 'nodelet-soak' });
t.teardown(() => client.close());
const signals = await mkdtemp(join(process.env.NODELET_SOAK_TMPDIR ?? tmpdir(), 'nodelet-soak-signal-'));

/** `n` pods bound to the node whose one container exits 0 once the file `<batch>` appears in the shared hostPath. */
async function createBatch(batch: string, n: number): Promise<void> {
  const slots = new Semaphore(16);
  await Promise.all(
    range(n).map(async (i) => {
      await slots.acquire();
      try {
        const pod: Pod = {
          apiVersion: 'v1',
          kind: 'Pod',
          metadata: { name: `${batch}-${i}`, namespace: 'default', labels: { 'soak-batch': batch } },
          spec: {
            nodeName: node.nodeName,
            restartPolicy: 'Never',
            terminationGracePeriodSeconds: 0,
            automountServiceAccountToken: false,
            volumes: [{ name: 'signals', hostPath: { path: signals, type: 'Directory' } }],
            containers: [
              {
                name: 'app',
                image: BUSYBOX,
                imagePullPolicy: 'Never',
                command: ['sh', '-c', `while [ ! -e /signals/${batch} ]; do usleep 100000; done`],
                volumeMounts: [{ name: 'signals', mountPath: '/signals' }],
              },
            ],
          },
        };
        await client.request('POST', '/api/v1/namespaces/default/pods', { body: pod });
      } finally {
        slots.release();
      }
    }),
  );
}

const listBatch = async (batch: string): Promise<Pod[]> =>
  (await client.request<PodList>('GET', `/api/v1/namespaces/default/pods${query({ labelSelector: `soak-batch=${batch}` })}`)).items;

/** Creates the batch and waits until all its pods run; returns the seconds it took. */
async function startBatch(batch: string): Promise<number> {
  const clock = stopwatch();
  await createBatch(batch, PODS);
  await poll(`${PODS} pods of ${batch} Running in the apiserver`, async (why) => {
    const pods = await listBatch(batch);
    const running = pods.filter((p) => p.status?.phase === 'Running').length;
    why(`${running} of ${pods.length} Running`);
    return running === PODS ? true : undefined;
  }, START_MS, 500);
  return clock();
}

t.test(`status storm: ${PODS} pods finish at once`, { timeout: START_MS + 120_000 }, async (t) => {
  const startSeconds = await startBatch('storm');
  const heap0 = settledHeap();
  const sent0 = sync.sent;
  const t0 = performance.now();
  await writeFile(join(signals, 'storm'), '');
  const seen = new Map<string, number>();
  let backwards = 0;
  await poll(`every pod Succeeded in the apiserver within ${FRESH_MS / 1000} s`, async (why) => {
    for (const p of await listBatch('storm')) {
      const name = p.metadata?.name ?? '';
      if (p.status?.phase === 'Succeeded') {
        if (!seen.has(name)) seen.set(name, (performance.now() - t0) / 1000);
      } else if (seen.has(name)) backwards++;
    }
    why(`${seen.size} of ${PODS}`);
    return seen.size === PODS ? true : undefined;
  }, FRESH_MS, 100);
  const fresh = [...seen.values()];
  const patches = sync.sent - sent0;
  const heap1 = settledHeap();
  t.equal(backwards, 0, 'no status went back from Succeeded');
  t.ok(patches <= PODS * 3, `${patches} status patches for ${PODS} pods (≤ 3 each: coalesced)`);
  t.ok(heap1 - heap0 <= 32 * 1024 * 1024, `heap ${mib(heap0)} → ${mib(heap1)} MiB (≤ +32 MiB)`);
  figures(t, {
    pods: PODS,
    start_s: startSeconds,
    fresh_p50_s: round(percentile(fresh, 50), 2),
    fresh_p99_s: round(percentile(fresh, 99), 2),
    fresh_max_s: round(Math.max(...fresh), 2),
    patches,
    heap_before_mib: mib(heap0),
    heap_after_mib: mib(heap1),
  });
});

t.test(`apiserver outage while ${PODS} pods finish`, { timeout: START_MS + OUTAGE_MS + RECOVER_MS + 120_000 }, async (t) => {
  const startSeconds = await startBatch('outage');
  const heap0 = settledHeap();
  await cp.stopApiserver();
  const stoppedAt = Date.now();
  const sent0 = sync.sent;
  await writeFile(join(signals, 'outage'), '');
  const local = stopwatch();
  let localSeconds = 0;
  let slowestHealthz = 0;
  // nodelet carries on alone: every pod finishes in its own view, /healthz keeps answering.
  await poll('every pod Succeeded in nodelet\'s own /pods, and the outage long enough', async (why) => {
    const h0 = performance.now();
    await node.getLocal('/healthz');
    slowestHealthz = Math.max(slowestHealthz, performance.now() - h0);
    const { body } = await node.getLocal<PodList>('/pods');
    const done = body.items.filter((p) => p.metadata?.labels?.['soak-batch'] === 'outage' && p.status?.phase === 'Succeeded').length;
    if (done === PODS && localSeconds === 0) localSeconds = local();
    why(`${done} of ${PODS} Succeeded locally`);
    return done === PODS && Date.now() - stoppedAt >= OUTAGE_MS ? true : undefined;
  }, OUTAGE_MS + START_MS, 250);
  const heapDown = settledHeap();
  t.equal(sync.sent, sent0, 'nothing was delivered while the apiserver was away');
  t.ok(slowestHealthz < 1000, `/healthz answered throughout (slowest ${round(slowestHealthz)} ms)`);
  t.ok(heapDown - heap0 <= 32 * 1024 * 1024, `heap during the outage ${mib(heap0)} → ${mib(heapDown)} MiB (≤ +32 MiB: one status per pod)`);

  await cp.startApiserver();
  const back = stopwatch();
  await poll(`every newest status delivered within ${RECOVER_MS / 1000} s of the apiserver's return`, async (why) => {
    const done = (await listBatch('outage')).filter((p) => p.status?.phase === 'Succeeded').length;
    why(`${done} of ${PODS} Succeeded in the apiserver`);
    return done === PODS ? true : undefined;
  }, RECOVER_MS, 250);
  const recoverSeconds = back();
  const patches = sync.sent - sent0;
  t.ok(patches <= PODS * 2, `${patches} status patches for ${PODS} pods after the outage (≤ 2 each: the newest, not the history)`);
  figures(t, {
    pods: PODS,
    start_s: startSeconds,
    outage_s: round((Date.now() - stoppedAt) / 1000 - recoverSeconds),
    local_succeeded_s: localSeconds,
    healthz_slowest_ms: round(slowestHealthz),
    delivered_after_return_s: recoverSeconds,
    patches_after_return: patches,
    heap_before_mib: mib(heap0),
    heap_during_outage_mib: mib(heapDown),
  });
});
