import t from 'tap';
import type { Pod } from 'kubernetes-types/core/v1.js';
import { ApiError, KubeClient } from '../../src/apiserver/client.js';
import { loadKubeconfig } from '../../src/config/kubeconfig.js';
import { startControlPlane } from '../helpers/control-plane.js';
import { startClusterNode } from '../helpers/cluster-node.js';
import { BUSYBOX } from '../helpers/docker.js';

/**
 * The kubelet's admission re-check against its Node (pkg/kubelet/lifecycle/predicate.go), with a
 * real 1.37 control plane: a pod bound with `spec.nodeName` bypasses the scheduler, so nodelet
 * refuses one whose nodeSelector the node does not match (`NodeAffinity`); once the node is
 * labelled through the API the same kind of pod runs — admission reads the apiserver's Node, not
 * the labels nodelet registered; and a NoExecute taint added through the API refuses a pod that
 * does not tolerate it (`TaintToleration`).
 */
t.setTimeout(300_000);

const cp = await startControlPlane(t);
const admin = new KubeClient(loadKubeconfig(cp.adminKubeconfig));
t.teardown(() => admin.close());
const node = await startClusterNode(t, cp);

const getPod = (name: string) => admin.request<Pod>('GET', `/api/v1/namespaces/default/pods/${name}`).catch((err: unknown) => (err instanceof ApiError && err.code === 404 ? undefined : Promise.reject(err)));
const createPod = (name: string, spec: Record<string, unknown> = {}) =>
  admin.request('POST', '/api/v1/namespaces/default/pods', {
    body: {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name },
      spec: {
        automountServiceAccountToken: false,
        nodeName: node.nodeName,
        terminationGracePeriodSeconds: 1,
        nodeSelector: { 'nodelet.test/admit': 'yes' },
        containers: [{ name: 'main', image: BUSYBOX, command: ['sh', '-c', 'sleep 3600'] }],
        ...spec,
      },
    },
  });
const patchNode = (body: unknown) => admin.request('PATCH', `/api/v1/nodes/${node.nodeName}`, { body, contentType: 'application/merge-patch+json' });
const phaseOf = (name: string, phase: string) => async () => {
  const p = await getPod(name);
  return p?.status?.phase === phase ? p : undefined;
};

t.test('a nodeSelector the node lacks: Failed NodeAffinity; labelled through the API: the next pod runs', async (t) => {
  await createPod('unmatched');
  const refused = await node.waitFor('unmatched Failed', phaseOf('unmatched', 'Failed'), 90_000);
  t.equal(refused.status?.reason, 'NodeAffinity');
  t.equal(refused.status?.message, "Pod was rejected: Predicate NodeAffinity failed: node(s) didn't match Pod's node affinity/selector");

  await patchNode({ metadata: { labels: { 'nodelet.test/admit': 'yes' } } });
  await createPod('matched');
  const running = await node.waitFor('matched Running', phaseOf('matched', 'Running'), 90_000);
  t.equal(running.status?.reason, undefined, 'admitted against the label added through the API');
});

t.test('a NoExecute taint added through the API: an untolerating pod is Failed TaintToleration, a tolerating one runs', async (t) => {
  await patchNode({ spec: { taints: [{ key: 'nodelet.test/evict', value: 'x', effect: 'NoExecute' }] } });
  await createPod('untolerating');
  const refused = await node.waitFor('untolerating Failed', phaseOf('untolerating', 'Failed'), 90_000);
  t.equal(refused.status?.reason, 'TaintToleration');
  t.equal(refused.status?.message, "Pod was rejected: Predicate TaintToleration failed: node(s) had taints that the pod didn't tolerate");
  await createPod('tolerating', { tolerations: [{ key: 'nodelet.test/evict', operator: 'Exists', effect: 'NoExecute' }] });
  await node.waitFor('tolerating Running', phaseOf('tolerating', 'Running'), 90_000);
  await patchNode({ spec: { taints: null } });
  t.pass('the tolerating pod runs');
});
