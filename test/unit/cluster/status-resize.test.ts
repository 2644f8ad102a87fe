import t from 'tap';
import type { PodStatus } from '../../../src/api/types.js';
import { podStatusNeedsReconcile, statusPatch } from '../../../src/cluster/status-sync.js';

const containerStatus = { name: 'a', image: 'img', imageID: '', ready: true, restartCount: 0, resources: { limits: { cpu: '200m' } }, allocatedResources: { cpu: '200m' } };
/** Our status with the pod-level fields (not in kubernetes-types' PodStatus, which status-sync takes). */
const podLevel = (fields: Pick<PodStatus, 'allocatedResources' | 'resources'>): PodStatus => ({ ...ours, ...fields });
const ours: PodStatus = { phase: 'Running', conditions: [{ type: 'Ready', status: 'True' }], containerStatuses: [containerStatus] };

t.test('a resize condition gone from nodelet\'s status is deleted on the apiserver; allocatedResources is sent', async (t) => {
  const held: PodStatus = { ...ours, conditions: [{ type: 'Ready', status: 'True' }, { type: 'PodResizeInProgress', status: 'True' }, { type: 'Foreign', status: 'True' }] };
  const patch = statusPatch('uid', held, ours);
  t.same(patch.status.conditions, [{ type: 'Ready', status: 'True' }, { type: 'PodResizeInProgress', $patch: 'delete' }], 'deleted by a strategic-merge directive; others\' conditions left alone');
  t.same((patch.status.containerStatuses as Record<string, unknown>[])[0], containerStatus, 'as the kubelet does since 1.35');
  t.equal(podStatusNeedsReconcile(held, ours), true, 'the stale condition needs a patch');
  const { allocatedResources: _a, ...sent } = containerStatus;
  t.equal(podStatusNeedsReconcile({ ...ours, containerStatuses: [sent] }, ours), false, 'an apiserver that drops allocatedResources (1.34) is no difference');
  t.equal(podStatusNeedsReconcile({ ...ours, containerStatuses: [{ ...containerStatus, allocatedResources: { cpu: '100m' } }] }, ours), true, 'one holding other ones is');
  t.equal(podStatusNeedsReconcile(ours, podLevel({ allocatedResources: { cpu: '1' }, resources: { limits: { cpu: '1' } } })), false, 'nor the dropped pod-level fields');
  t.equal(podStatusNeedsReconcile(podLevel({ allocatedResources: { cpu: '2' } }), podLevel({ allocatedResources: { cpu: '1' } })), true, 'held different pod-level ones: sent again');
  const pending: PodStatus = { ...ours, conditions: [...(ours.conditions ?? []), { type: 'PodResizePending', status: 'True', reason: 'Infeasible', message: 'no' }] };
  t.same(statusPatch('uid', ours, pending).status.conditions, pending.conditions, 'a resize condition is the kubelet\'s: sent');
});
