import t from 'tap';
import type { Node, NodeList, Pod, PodList } from 'kubernetes-types/core/v1.js';
import { startClusterNode, type ClusterNode } from '../helpers/cluster-node.js';
import { startControlPlane } from '../helpers/control-plane.js';
import { BUSYBOX, containersOfNode, testDocker } from '../helpers/docker.js';
import { waitFor } from '../helpers/wait.js';

/**
 * Three nodelets (three node names, one Docker engine) as the nodes of one real control plane:
 * a Deployment of 6 replicas spreads over them through the real scheduler, every pod becomes
 * Running and Ready as the apiserver shows it, and scaling to 0 removes them all — graceful
 * deletion through nodelet: containers stopped and removed, then nodelet deletes the objects.
 *
 * The pods opt out of the ServiceAccount token volume (`automountServiceAccountToken: false`):
 * projected volumes are not implemented yet.
 */

t.setTimeout(150_000);

const REPLICAS = 6;

const deployment = `apiVersion: apps/v1
kind: Deployment
metadata: { name: spread }
spec:
  replicas: ${REPLICAS}
  selector: { matchLabels: { app: spread } }
  template:
    metadata: { labels: { app: spread } }
    spec:
      automountServiceAccountToken: false
      terminationGracePeriodSeconds: 20
      containers:
        - name: sleeper
          image: ${BUSYBOX}
          imagePullPolicy: Never
          # Sleeps; ends at once on SIGTERM (so a prompt end shows the TERM arrived).
          command: ["sh", "-c", "trap 'exit 0' TERM; while true; do sleep 0.2; done"]
`;


const ready = (p: Pod) => p.status?.phase === 'Running' && p.status.conditions?.find((c) => c.type === 'Ready')?.status === 'True';

t.test('a Deployment of 6 spreads over three nodelets, runs, and scales to 0', async (t) => {
  const cp = await startControlPlane(t);
  const docker = testDocker();
  const nodes: ClusterNode[] = [];
  for (const suffix of ['a', 'b', 'c']) {
    nodes.push(await startClusterNode(t, cp, { nodeName: `mn-${suffix}-${Math.random().toString(16).slice(2, 8)}` }));
  }
  const names = nodes.map((n) => n.nodeName);

  const kubectlJSON = async <T>(args: string[]): Promise<T> => {
    const r = await cp.kubectl([...args, '-o', 'json']);
    if (r.code !== 0) throw new Error(`kubectl ${args.join(' ')}: ${r.stderr}`);
    return JSON.parse(r.stdout) as T;
  };
  const spreadPods = async () => (await kubectlJSON<PodList>(['get', 'pods', '-l', 'app=spread'])).items;

  await waitFor('three nodes Ready', async () => {
    const list = await kubectlJSON<NodeList>(['get', 'nodes']);
    const isReady = (n: Node) => n.status?.conditions?.find((c) => c.type === 'Ready')?.status === 'True' && !n.spec?.taints?.length;
    const readyNames = list.items.filter(isReady).map((n) => n.metadata?.name);
    return names.every((n) => readyNames.includes(n)) ? true : undefined;
  });
  t.pass('three Nodes registered and Ready, untainted');

  const applied = await cp.kubectl(['apply', '-f', '-'], { input: deployment });
  t.equal(applied.code, 0, applied.stderr);

  const started = Date.now();
  const running = await waitFor('6 pods Running and Ready', async () => {
    const items = await spreadPods();
    return items.length === REPLICAS && items.every(ready) ? items : undefined;
  }, 60_000);
  t.pass(`${REPLICAS} pods Running and Ready in ${Date.now() - started} ms`);

  const perNode = new Map(names.map((n) => [n, [] as Pod[]]));
  for (const p of running) perNode.get(p.spec?.nodeName ?? '')?.push(p);
  t.equal([...perNode.values()].reduce((a, l) => a + l.length, 0), REPLICAS, `every pod is on one of the three nodes (${running.map((p) => p.spec?.nodeName).join(', ')})`);
  for (const [name, list] of perNode) t.ok(list.length >= 1, `node ${name} got ${list.length} pod(s)`);

  // Each nodelet runs exactly the pods bound to it, with the container the apiserver names.
  for (const node of nodes) {
    const expected = (perNode.get(node.nodeName) ?? []).map((p) => p.metadata?.uid).sort();
    const local = await node.getLocal<PodList>('/pods');
    t.equal(local.status, 200);
    const mine = local.body.items.filter((p) => p.metadata?.labels?.app === 'spread');
    t.same(mine.map((p) => p.metadata?.uid).sort(), expected, `${node.nodeName} serves its own pods, and only those`);
    const ids = new Set((await containersOfNode(docker, node.nodeName)).filter((c) => c.State === 'running').map((c) => `docker://${c.Id}`));
    for (const p of perNode.get(node.nodeName) ?? []) {
      const id = p.status?.containerStatuses?.[0]?.containerID ?? '';
      t.ok(ids.has(id), `${p.metadata?.name}: its container runs on the engine under node ${node.nodeName}`);
    }
  }

  const uids = new Set(running.map((p) => p.metadata?.uid ?? ''));
  const scaled = await cp.kubectl(['scale', 'deployment/spread', '--replicas=0']);
  t.equal(scaled.code, 0, scaled.stderr);
  const scaledAt = Date.now();

  // Graceful deletion: the pods are marked Terminating with the pod's grace period; nodelet sends
  // SIGTERM, the containers exit, and nodelet deletes each object (grace 0) once they stopped.
  // Without nodelet's final delete the objects would stay Terminating for good.
  const graces = new Set<number>();
  await waitFor('every pod object deleted', async () => {
    const items = await spreadPods();
    for (const p of items) if (p.metadata?.deletionGracePeriodSeconds !== undefined) graces.add(p.metadata.deletionGracePeriodSeconds);
    return items.length === 0 ? true : undefined;
  }, 40_000);
  const gone = Date.now() - scaledAt;
  t.pass(`every pod object deleted ${gone} ms after scale to 0`);
  t.ok(gone < 20_000, `well within the 20 s grace period: the containers ended on SIGTERM (${gone} ms)`);
  // 0 is nodelet's own final delete (as the kubelet's status manager sends it), which the
  // apiserver may write before it removes the object: a watcher can catch that moment.
  t.ok([...graces].every((g) => g === 20 || g === 0), `any Terminating pod seen had the pod's grace period, or 0 from nodelet's final delete (${[...graces].join(', ') || 'none seen'})`);

  for (const node of nodes) {
    await waitFor(`${node.nodeName}: containers of the deleted pods removed`, async () => {
      const left = (await containersOfNode(docker, node.nodeName)).filter((c) => uids.has(c.Labels['io.kubernetes.pod.uid'] ?? ''));
      return left.length === 0 ? true : undefined;
    }, 20_000).then(
      () => t.pass(`${node.nodeName}: no container of the deleted pods is left`),
      (err: unknown) => t.fail(String(err)),
    );
    const local = await node.getLocal<PodList>('/pods');
    t.equal(local.body.items.filter((p) => uids.has(p.metadata?.uid ?? '')).length, 0, `${node.nodeName}: /pods no longer lists them`);
  }
});
