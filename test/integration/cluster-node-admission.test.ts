import t from 'tap';
import type { EventList } from 'kubernetes-types/core/v1.js';
import { KubeClient } from '../../src/apiserver/client.js';
import { loadKubeconfig } from '../../src/config/kubeconfig.js';
import { startControlPlane } from '../helpers/control-plane.js';
import { boundSleeper, getPodIfAny, startClusterNode } from '../helpers/cluster-node.js';

/**
 * The kubelet's admission re-check against its Node (pkg/kubelet/lifecycle/predicate.go), with a
 * real 1.37 control plane: a pod bound with `spec.nodeName` bypasses the scheduler, so nodelet
 * refuses one whose nodeSelector the node does not match (`NodeAffinity`); once the node is
 * labelled through the API the same kind of pod runs — admission reads the apiserver's Node, not
 * the labels nodelet registered; and a NoExecute taint added through the API refuses a pod that
 * does not tolerate it (`TaintToleration`; the controller-manager's taint eviction controller may
 * delete that pod before its status is read, so the test reads the refusal's event).
 */
t.setTimeout(300_000);

const cp = await startControlPlane(t);
const admin = new KubeClient(loadKubeconfig(cp.adminKubeconfig));
t.teardown(() => admin.close());
const node = await startClusterNode(t, cp);

const getPod = (name: string) => getPodIfAny(admin, name);
const createPod = (name: string, spec: Record<string, unknown> = {}) =>
  admin.request('POST', '/api/v1/namespaces/default/pods', { body: boundSleeper(node.nodeName, name, { nodeSelector: { 'nodelet.test/admit': 'yes' }, ...spec }) });
const patchNode = (body: unknown) => admin.request('PATCH', `/api/v1/nodes/${node.nodeName}`, { body, contentType: 'application/merge-patch+json' });
/** The node's watch saw the change (a pod created at once may otherwise race the Node's event, under the kubelet too). */
const watchSees = (what: string, check: (n: NonNullable<ReturnType<typeof watchedNode>>) => boolean) =>
  node.waitFor(`the node watch sees ${what}`, () => {
    const n = watchedNode();
    return n && check(n) ? true : undefined;
  }, 30_000);
const watchedNode = () => node.nodelet.cluster?.nodeWatch.node;
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
  await watchSees('the label', (n) => n.metadata?.labels?.['nodelet.test/admit'] === 'yes');
  await createPod('matched');
  const running = await node.waitFor('matched Running', phaseOf('matched', 'Running'), 90_000);
  t.equal(running.status?.reason, undefined, 'admitted against the label added through the API');
});

t.test('a NoExecute taint added through the API: an untolerating pod is Failed TaintToleration, a tolerating one runs', async (t) => {
  await patchNode({ spec: { taints: [{ key: 'nodelet.test/evict', value: 'x', effect: 'NoExecute' }] } });
  await watchSees('the taint', (n) => (n.spec?.taints ?? []).some((x) => x.key === 'nodelet.test/evict'));
  await createPod('untolerating');
  // The controller-manager's taint eviction controller deletes a pod bound to a node with a NoExecute
  // taint it does not tolerate, so its Failed status may never be seen: the refusal's event stays.
  const event = await node.waitFor('the TaintToleration event', async () => {
    const list = await admin.request<EventList>('GET', '/api/v1/namespaces/default/events?fieldSelector=involvedObject.name%3Duntolerating');
    return list.items.find((e) => e.reason === 'TaintToleration');
  }, 90_000);
  t.equal(event.type, 'Warning');
  t.equal(event.message, "Predicate TaintToleration failed: node(s) had taints that the pod didn't tolerate");
  const pod = await getPod('untolerating');
  t.notOk(pod?.status?.containerStatuses?.some((c) => c.state?.running), 'never ran');
  if (pod?.status?.phase === 'Failed') t.equal(pod.status.reason, 'TaintToleration', 'Failed with the predicate as reason, while the pod still exists');
  await createPod('tolerating', { tolerations: [{ key: 'nodelet.test/evict', operator: 'Exists', effect: 'NoExecute' }] });
  await node.waitFor('tolerating Running', phaseOf('tolerating', 'Running'), 90_000);
  await patchNode({ spec: { taints: null } });
  t.pass('the tolerating pod runs');
});
