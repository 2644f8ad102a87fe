import t from 'tap';
import type { PodStatus } from '../../../src/api/types.js';
import { podStatusNeedsReconcile, statusPatch } from '../../../src/cluster/status-sync.js';

const containerStatus = { name: 'a', image: 'img', imageID: '', ready: true, restartCount: 0, resources: { limits: { cpu: '200m' } }, allocatedResources: { cpu: '200m' } };
const ours: PodStatus = { phase: 'Running', conditions: [{ type: 'Ready', status: 'True' }], containerStatuses: [containerStatus] };

t.test('a resize condition gone from nodelet\'s status is deleted on the apiserver; allocatedResources is not sent', async (t) => {
  const held: PodStatus = { ...ours, conditions: [{ type: 'Ready', status: 'True' }, { type: 'PodResizeInProgress', status: 'True' }, { type: 'Foreign', status: 'True' }] };
  const patch = statusPatch('uid', held, ours);
  t.same(patch.status.conditions, [{ type: 'Ready', status: 'True' }, { type: 'PodResizeInProgress', $patch: 'delete' }], 'deleted by a strategic-merge directive; others\' conditions left alone');
  t.same((patch.status.containerStatuses as Record<string, unknown>[])[0], { name: 'a', image: 'img', imageID: '', ready: true, restartCount: 0, resources: { limits: { cpu: '200m' } } });
  t.equal(podStatusNeedsReconcile(held, ours), true, 'the stale condition needs a patch');
  const { allocatedResources: _a, ...sent } = containerStatus;
  t.equal(podStatusNeedsReconcile({ ...ours, containerStatuses: [sent] }, ours), false, 'the apiserver not holding allocatedResources is no difference');
  const pending: PodStatus = { ...ours, conditions: [...(ours.conditions ?? []), { type: 'PodResizePending', status: 'True', reason: 'Infeasible', message: 'no' }] };
  t.same(statusPatch('uid', ours, pending).status.conditions, pending.conditions, 'a resize condition is the kubelet\'s: sent');
});
