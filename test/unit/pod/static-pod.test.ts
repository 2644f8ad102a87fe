import { createHash } from 'node:crypto';
import t from 'tap';
import type { Pod } from '../../../src/api/types.js';
import { validatePod } from '../../../src/api/validation.js';
import { canonicalJSON } from '../../../src/api/canonical-json.js';
import { rfc3339Nano } from '../../../src/api/time.js';
import { applyStaticPodDefaults, staticPodUID } from '../../../src/pod/static-pod.js';

const parsed = (): Pod => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name: 'etcd', labels: { tier: 'control' } },
  spec: { containers: [{ name: 'etcd', image: 'etcd:3.5' }] },
});
const now = new Date('2026-01-02T03:04:05.678Z');
const opts = { nodeName: 'Node-1', source: '/etc/kubernetes/manifests/etcd.yaml', now };

t.test('UID is the md5 of canonical JSON + host + file', async (t) => {
  const want = createHash('md5').update(canonicalJSON(parsed())).update('host:Node-1').update('file:/etc/kubernetes/manifests/etcd.yaml').digest('hex');
  const pod = applyStaticPodDefaults(parsed(), opts);
  t.equal(pod.metadata?.uid, want);
  t.match(pod.metadata?.uid, /^[0-9a-f]{32}$/);
  t.equal(staticPodUID(parsed(), 'Node-1', opts.source), want);
});

t.test('UID is deterministic and sensitive', async (t) => {
  const uid = (p: Pod, o = opts) => applyStaticPodDefaults(p, o).metadata?.uid;
  const base = uid(parsed());
  t.equal(uid(parsed()), base, 'same manifest and node → same UID');
  t.equal(uid(parsed(), { ...opts, now: new Date(0) }), base, 'time does not matter');
  const reordered: Pod = { spec: parsed().spec, metadata: { labels: { tier: 'control' }, name: 'etcd' }, kind: 'Pod', apiVersion: 'v1' };
  t.equal(uid(reordered), base, 'key order does not matter');
  const changed = parsed();
  changed.spec!.containers[0]!.image = 'etcd:3.6';
  t.not(uid(changed), base, 'content change → new UID');
  t.not(uid(parsed(), { ...opts, nodeName: 'node-2' }), base, 'other node → new UID');
  t.not(uid(parsed(), { ...opts, source: '/other/etcd.yaml' }), base, 'other file → new UID');
  const own = parsed();
  own.metadata = { ...own.metadata, uid: 'explicit-uid' };
  t.equal(uid(own), 'explicit-uid', 'an explicit UID is kept');
});

t.test('name, namespace, node, annotations, toleration, phase, spec defaults', async (t) => {
  const input = parsed();
  const pod = applyStaticPodDefaults(input, opts);
  t.equal(input.metadata?.name, 'etcd', 'input untouched');
  t.equal(pod.metadata?.name, 'etcd-node-1');
  t.equal(pod.metadata?.namespace, 'default');
  t.same(pod.metadata?.labels, { tier: 'control' });
  t.same(pod.metadata?.annotations, {
    'kubernetes.io/config.hash': pod.metadata?.uid,
    'kubernetes.io/config.source': 'file',
    'kubernetes.io/config.seen': '2026-01-02T03:04:05.678000000Z',
  });
  t.equal(pod.spec?.nodeName, 'Node-1');
  t.same(pod.spec?.tolerations, [{ operator: 'Exists', effect: 'NoExecute' }]);
  t.same(pod.status, { phase: 'Pending' });
  t.match(pod.spec, { restartPolicy: 'Always', dnsPolicy: 'ClusterFirst', terminationGracePeriodSeconds: 30 });
  t.equal(pod.spec?.containers[0]?.imagePullPolicy, 'IfNotPresent');
  t.same(validatePod(pod), [], 'the result passes validation');
});

t.test('existing namespace, annotations and tolerations', async (t) => {
  const input = parsed();
  input.metadata = { ...input.metadata, namespace: 'kube-system', annotations: { team: 'x' } };
  input.spec!.tolerations = [
    { key: 'a', operator: 'Equal', value: 'b', effect: 'NoSchedule' },
    { operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 30 },
  ];
  const pod = applyStaticPodDefaults(input, opts);
  t.equal(pod.metadata?.namespace, 'kube-system');
  t.equal(pod.metadata?.annotations?.team, 'x');
  t.same(pod.spec?.tolerations, [
    { key: 'a', operator: 'Equal', value: 'b', effect: 'NoSchedule' },
    { operator: 'Exists', effect: 'NoExecute' },
  ], 'a matching toleration is replaced, not duplicated');
});

t.test('odd input does not throw', async (t) => {
  const pod = applyStaticPodDefaults({ apiVersion: 'v1', kind: 'Pod' }, opts);
  t.equal(pod.metadata?.name, undefined, 'no name stays no name, for validation to report');
  t.equal(pod.metadata?.namespace, 'default');
  t.same(pod.spec?.containers, []);
});

t.test('rfc3339Nano', async (t) => {
  t.equal(rfc3339Nano(new Date('2026-11-29T20:00:00Z')), '2026-11-29T20:00:00.000000000Z');
});

t.test("the manifest's status never reaches the pod: a static pod's status is nodelet's", async (t) => {
  const withStatus = { ...parsed(), status: { phase: 'Running', conditions: 'Ready', podIP: '6.6.6.6', containerStatuses: [{ name: 'x', ready: true }] } } as unknown as Pod;
  const pod = applyStaticPodDefaults(withStatus, opts);
  t.same(pod.status, { phase: 'Pending' });
});
