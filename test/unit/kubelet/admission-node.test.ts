import t from 'tap';
import type { NodeSelectorRequirement, NodeSelectorTerm, Taint, Toleration } from 'kubernetes-types/core/v1.js';
import type { Pod } from '../../../src/api/types.js';
import { admissionRefusal } from '../../../src/kubelet/admission.js';
import {
  fieldRequirementMatches,
  fitsNodeName,
  labelRequirementMatches,
  matchesNodeSelectorTerms,
  matchesRequiredNodeAffinity,
  parseInt64,
  toleratesTaint,
  untoleratedNoExecuteTaint,
  type AdmissionNode,
} from '../../../src/kubelet/node-admission.js';

const node: AdmissionNode = {
  metadata: { name: 'node-1', labels: { 'kubernetes.io/os': 'linux', zone: 'a', disk: 'ssd', gpus: '4', empty: '' } },
  spec: { taints: [] },
};
const req = (key: string, operator: string, values?: string[]): NodeSelectorRequirement => ({ key, operator, ...(values ? { values } : {}) });
const podWith = (spec: Pod['spec'], annotations?: Record<string, string>): Pod => ({
  metadata: { uid: 'u', name: 'p', namespace: 'default', ...(annotations ? { annotations } : {}) },
  spec: { containers: [{ name: 'c', image: 'busybox' }], ...spec },
});
const required = (terms: NodeSelectorTerm[]): Pod =>
  podWith({ containers: [{ name: 'c', image: 'busybox' }], affinity: { nodeAffinity: { requiredDuringSchedulingIgnoredDuringExecution: { nodeSelectorTerms: terms } } } });

t.test('label requirements: each operator, against present and absent labels', async (t) => {
  const labels = node.metadata?.labels ?? {};
  t.equal(labelRequirementMatches(req('zone', 'In', ['a', 'b']), labels), true);
  t.equal(labelRequirementMatches(req('zone', 'In', ['b']), labels), false);
  t.equal(labelRequirementMatches(req('nope', 'In', ['']), labels), false, 'In needs the label, even for an empty value');
  t.equal(labelRequirementMatches(req('empty', 'In', ['']), labels), true, 'an empty label value is a value');
  t.equal(labelRequirementMatches(req('zone', 'NotIn', ['b']), labels), true);
  t.equal(labelRequirementMatches(req('zone', 'NotIn', ['a']), labels), false);
  t.equal(labelRequirementMatches(req('nope', 'NotIn', ['a']), labels), true, 'NotIn holds for an absent label');
  t.equal(labelRequirementMatches(req('zone', 'Exists'), labels), true);
  t.equal(labelRequirementMatches(req('nope', 'Exists'), labels), false);
  t.equal(labelRequirementMatches(req('nope', 'DoesNotExist'), labels), true);
  t.equal(labelRequirementMatches(req('zone', 'DoesNotExist'), labels), false);
  t.equal(labelRequirementMatches(req('gpus', 'Gt', ['3']), labels), true);
  t.equal(labelRequirementMatches(req('gpus', 'Gt', ['4']), labels), false, 'Gt is strict');
  t.equal(labelRequirementMatches(req('gpus', 'Lt', ['5']), labels), true);
  t.equal(labelRequirementMatches(req('gpus', 'Lt', ['4']), labels), false, 'Lt is strict');
  t.equal(labelRequirementMatches(req('gpus', 'Gt', ['10']), labels), false, 'compared as integers, not strings');
  t.equal(labelRequirementMatches(req('zone', 'Gt', ['1']), labels), false, 'a label that is no integer never matches Gt');
  t.equal(labelRequirementMatches(req('nope', 'Lt', ['1']), labels), false, 'nor an absent one');
});

t.test('label requirements that do not parse: undefined (the term is an error, not a match)', async (t) => {
  const labels = node.metadata?.labels ?? {};
  t.equal(labelRequirementMatches(req('zone', 'In', []), labels), undefined, 'In without values');
  t.equal(labelRequirementMatches(req('zone', 'NotIn'), labels), undefined, 'NotIn without values');
  t.equal(labelRequirementMatches(req('zone', 'Exists', ['a']), labels), undefined, 'Exists with values');
  t.equal(labelRequirementMatches(req('zone', 'DoesNotExist', ['a']), labels), undefined);
  t.equal(labelRequirementMatches(req('gpus', 'Gt', ['1', '2']), labels), undefined, 'Gt with two values');
  t.equal(labelRequirementMatches(req('gpus', 'Gt', ['x']), labels), undefined, 'Gt with no integer');
  t.equal(labelRequirementMatches(req('gpus', 'Lt', ['-1']), labels), undefined, 'a signed bound is no label value');
  t.equal(labelRequirementMatches(req('gpus', 'Lt', ['99999999999999999999']), labels), undefined, 'beyond int64');
  t.equal(labelRequirementMatches(req('zone', 'Equals', ['a']), labels), undefined, 'unknown operator');
  t.equal(labelRequirementMatches(req('zone', 'In', ['a b']), labels), undefined, 'a value that is no label value');
});

t.test('parseInt64 is strconv.ParseInt(s, 10, 64)', async (t) => {
  t.equal(parseInt64('42'), 42n);
  t.equal(parseInt64('-9223372036854775808'), -(2n ** 63n));
  t.equal(parseInt64('9223372036854775807'), 2n ** 63n - 1n);
  t.equal(parseInt64('9223372036854775808'), undefined);
  t.equal(parseInt64('1.5'), undefined);
  t.equal(parseInt64(''), undefined);
  t.equal(parseInt64('0x10'), undefined);
});

t.test('field requirements: metadata.name with In/NotIn and one value', async (t) => {
  t.equal(fieldRequirementMatches(req('metadata.name', 'In', ['node-1']), 'node-1'), true);
  t.equal(fieldRequirementMatches(req('metadata.name', 'In', ['node-2']), 'node-1'), false);
  t.equal(fieldRequirementMatches(req('metadata.name', 'NotIn', ['node-2']), 'node-1'), true);
  t.equal(fieldRequirementMatches(req('metadata.name', 'NotIn', ['node-1']), 'node-1'), false);
  t.equal(fieldRequirementMatches(req('metadata.name', 'In', ['node-1', 'node-2']), 'node-1'), undefined, 'exactly one value');
  t.equal(fieldRequirementMatches(req('metadata.name', 'Exists'), 'node-1'), undefined, 'only In and NotIn');
  t.equal(fieldRequirementMatches(req('metadata.uid', 'In', ['node-1']), 'node-1'), false, 'no other field is known');
});

t.test('terms are ORed, their expressions ANDed; empty or broken terms match nothing', async (t) => {
  t.ok(matchesNodeSelectorTerms([{ matchExpressions: [req('zone', 'In', ['b'])] }, { matchExpressions: [req('disk', 'In', ['ssd'])] }], node), 'second term matches');
  t.notOk(matchesNodeSelectorTerms([{ matchExpressions: [req('zone', 'In', ['a']), req('disk', 'In', ['hdd'])] }], node), 'one expression fails the term');
  t.ok(matchesNodeSelectorTerms([{ matchExpressions: [req('zone', 'In', ['a'])], matchFields: [req('metadata.name', 'In', ['node-1'])] }], node), 'labels and fields');
  t.notOk(matchesNodeSelectorTerms([{ matchExpressions: [req('zone', 'In', ['a'])], matchFields: [req('metadata.name', 'In', ['node-2'])] }], node), 'fields fail the term');
  t.notOk(matchesNodeSelectorTerms([], node), 'no terms: nothing');
  t.notOk(matchesNodeSelectorTerms([{}], node), 'a term with no expressions: nothing');
  t.notOk(matchesNodeSelectorTerms([{ matchExpressions: [] }], node));
  t.ok(matchesNodeSelectorTerms([{}, { matchExpressions: [req('zone', 'Exists')] }], node), 'an empty term is dropped, the others still count');
  t.notOk(matchesNodeSelectorTerms([{ matchExpressions: [req('zone', 'DoesNotExist'), req('gpus', 'Gt', ['x'])] }], node), 'a term that fails to parse');
  t.ok(matchesNodeSelectorTerms([{ matchExpressions: [req('gpus', 'Gt', ['x'])] }, { matchExpressions: [req('gpus', 'Gt', ['1'])] }], node), 'a broken term does not spoil the next');
  t.ok(matchesNodeSelectorTerms([{ matchFields: [req('metadata.name', 'In', ['other'])] }], { metadata: { labels: {} } }), 'a node without a name has no fields to fail');
});

t.test('required node affinity: nodeSelector AND the required terms', async (t) => {
  t.ok(matchesRequiredNodeAffinity(podWith({ containers: [] }), node), 'nothing required');
  t.ok(matchesRequiredNodeAffinity(podWith({ containers: [], nodeSelector: { zone: 'a', disk: 'ssd' } }), node));
  t.notOk(matchesRequiredNodeAffinity(podWith({ containers: [], nodeSelector: { zone: 'a', disk: 'hdd' } }), node));
  t.notOk(matchesRequiredNodeAffinity(podWith({ containers: [], nodeSelector: { nope: '' } }), node), 'an absent label is not an empty one');
  t.notOk(matchesRequiredNodeAffinity(required([]), node), 'nodeSelectorTerms: [] matches nothing');
  t.ok(matchesRequiredNodeAffinity(required([{ matchExpressions: [req('zone', 'In', ['a'])] }]), node));
  const both = podWith({ containers: [], nodeSelector: { zone: 'b' }, affinity: { nodeAffinity: { requiredDuringSchedulingIgnoredDuringExecution: { nodeSelectorTerms: [{ matchExpressions: [req('zone', 'Exists')] }] } } } });
  t.notOk(matchesRequiredNodeAffinity(both, node), 'the selector fails although the affinity holds');
  t.ok(matchesRequiredNodeAffinity(podWith({ containers: [], affinity: { nodeAffinity: {} } }), node), 'only preferred terms: nothing required');
});

t.test('nodeName: unset or the node', async (t) => {
  t.ok(fitsNodeName(podWith({ containers: [] }), node));
  t.ok(fitsNodeName(podWith({ containers: [], nodeName: 'node-1' }), node));
  t.notOk(fitsNodeName(podWith({ containers: [], nodeName: 'node-2' }), node));
});

t.test('tolerations: effect, key, operator as Toleration.ToleratesTaint', async (t) => {
  const taint: Taint = { key: 'k', value: 'v', effect: 'NoExecute' };
  const tol = (x: Toleration) => toleratesTaint(x, taint);
  t.ok(tol({ key: 'k', operator: 'Equal', value: 'v', effect: 'NoExecute' }));
  t.ok(tol({ key: 'k', value: 'v' }), 'empty operator is Equal; empty effect matches every effect');
  t.notOk(tol({ key: 'k', value: 'w' }), 'another value');
  t.notOk(tol({ key: 'k', operator: 'Equal' }), 'Equal with no value against a value');
  t.ok(tol({ key: 'k', operator: 'Exists' }), 'Exists: any value');
  t.ok(tol({ operator: 'Exists' }), 'empty key with Exists: every taint');
  t.notOk(tol({ operator: 'Exists', effect: 'NoSchedule' }), 'another effect');
  t.notOk(tol({ key: 'j', operator: 'Exists' }), 'another key');
  t.notOk(toleratesTaint({ key: 'n', operator: 'Gt', value: '1' }, { key: 'n', value: '5', effect: 'NoExecute' }), 'Gt is behind an alpha gate, off');
  t.ok(toleratesTaint({ key: 'k', operator: 'Equal' }, { key: 'k', effect: 'NoExecute' }), 'empty value equals no value');
});

t.test('only NoExecute taints are checked, the first untolerated one reported', async (t) => {
  const taints: Taint[] = [
    { key: 'a', effect: 'NoSchedule' },
    { key: 'b', effect: 'PreferNoSchedule' },
    { key: 'c', value: '1', effect: 'NoExecute' },
    { key: 'd', effect: 'NoExecute' },
  ];
  t.same(untoleratedNoExecuteTaint(taints, []), taints[2]);
  t.same(untoleratedNoExecuteTaint(taints, [{ key: 'c', value: '1' }]), taints[3]);
  t.equal(untoleratedNoExecuteTaint(taints, [{ key: 'c', value: '1' }, { key: 'd', operator: 'Exists', effect: 'NoExecute' }]), undefined);
  t.equal(untoleratedNoExecuteTaint(taints.slice(0, 2), []), undefined, 'NoSchedule taints do not refuse admission');
});

t.test('admissionRefusal: reasons, messages and the kubelet order', async (t) => {
  const tainted: AdmissionNode = { ...node, spec: { taints: [{ key: 'x', effect: 'NoExecute' }] } };
  t.equal(admissionRefusal(podWith({ containers: [], nodeSelector: { zone: 'b' } })), undefined, 'no node: not checked');
  t.same(admissionRefusal(podWith({ containers: [], nodeSelector: { zone: 'b' } }), [], undefined, node), {
    reason: 'NodeAffinity',
    message: "Predicate NodeAffinity failed: node(s) didn't match Pod's node affinity/selector",
  });
  t.same(admissionRefusal(podWith({ containers: [], nodeName: 'node-2' }), [], undefined, node), {
    reason: 'NodeName',
    message: "Predicate NodeName failed: node(s) didn't match the requested node name",
  });
  t.same(admissionRefusal(podWith({ containers: [] }), [], undefined, tainted), {
    reason: 'TaintToleration',
    message: "Predicate TaintToleration failed: node(s) had taints that the pod didn't tolerate",
  });
  t.equal(admissionRefusal(podWith({ containers: [] }, { 'kubernetes.io/config.source': 'file' }), [], undefined, tainted), undefined, 'static pods are not checked for taints');
  t.equal(admissionRefusal(podWith({ containers: [], tolerations: [{ operator: 'Exists' }] }), [], undefined, tainted), undefined, 'tolerated');
  t.equal(admissionRefusal(podWith({ containers: [], nodeName: 'node-2', nodeSelector: { zone: 'b' } }), [], undefined, tainted)?.reason, 'NodeAffinity', 'affinity before nodeName');
  t.equal(admissionRefusal(podWith({ containers: [], nodeName: 'node-2' }), [], undefined, tainted)?.reason, 'NodeName', 'nodeName before taints');
  const cpu = (n: string) => podWith({ containers: [{ name: 'c', image: 'busybox', resources: { requests: { cpu: n } } }], nodeSelector: { zone: 'b' } });
  t.equal(admissionRefusal(cpu('2'), [], { cpu: '1', memory: '1Gi', pods: '110' }, node)?.reason, 'OutOfcpu', 'resources before affinity');
  const port = (uid: string) => ({ ...podWith({ containers: [{ name: 'c', image: 'busybox', ports: [{ containerPort: 80, hostPort: 80 }] }] }), metadata: { uid, name: uid, namespace: 'default' } });
  t.equal(admissionRefusal(port('b'), [port('a')], undefined, tainted)?.reason, 'NodePorts', 'host ports before taints');
  t.equal(admissionRefusal({ ...port('b'), spec: { ...port('b').spec, containers: port('b').spec?.containers ?? [], nodeName: 'node-2' } }, [port('a')], undefined, node)?.reason, 'NodeName', 'nodeName before host ports');
});
