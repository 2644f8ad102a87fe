import t from 'tap';
import type { Pod } from 'kubernetes-types/core/v1.js';
import { mirrorPodOf } from '../../../src/cluster/mirror-pods.js';
import { statusPatch } from '../../../src/cluster/status-sync.js';
import { microTime, RetryDelay } from '../../../src/cluster/retry.js';
import { goArch, parseOsRelease } from '../../../src/node/facts.js';
import { engineOf } from '../../../src/runtime/docker/engine.js';
import type Docker from 'dockerode';

t.test('status patch: UID precondition, only kubelet conditions, cleared fields set to null', async (t) => {
  const patch = statusPatch(
    'u1',
    { phase: 'Pending', message: 'old', reason: 'Old', podIP: '10.0.0.1', conditions: [{ type: 'example.com/gate', status: 'True' }] },
    {
      phase: 'Running',
      conditions: [
        { type: 'example.com/gate', status: 'False' },
        { type: 'Ready', status: 'True' },
        { type: 'PodScheduled', status: 'True' },
      ],
      containerStatuses: [],
    },
  );
  t.same(patch.metadata, { uid: 'u1' });
  t.same((patch.status.conditions as { type: string }[]).map((c) => c.type), ['Ready', 'PodScheduled'], 'readiness gates belong to others');
  t.equal(patch.status.message, null);
  t.equal(patch.status.reason, null);
  t.equal(patch.status.podIP, null);
  t.equal(patch.status.phase, 'Running');
  t.notOk('hostIP' in patch.status, 'fields absent on both sides stay out of the patch');
  t.notOk('qosClass' in statusPatch('u', undefined, { phase: 'Running' }).status);
  const ready = statusPatch(
    'u',
    { conditions: [{ type: 'Ready', status: 'False', reason: 'ContainersNotReady', message: 'containers with unready status: [c]' }] },
    { conditions: [{ type: 'Ready', status: 'True' }] },
  );
  t.same(ready.status.conditions, [{ type: 'Ready', status: 'True', reason: null, message: null }], 'a condition that turned True drops its old reason and message');
  const disruption = { type: 'DisruptionTarget', status: 'True', reason: 'TerminationByKubelet', message: 'evicted' };
  const types = (p: ReturnType<typeof statusPatch>) => (p.status.conditions as { type: string }[]).map((c) => c.type);
  t.same(types(statusPatch('u', { phase: 'Running' }, { phase: 'Failed', conditions: [{ type: 'Ready', status: 'False' }, disruption] })), ['Ready', 'DisruptionTarget'], 'DisruptionTarget goes with the patch that makes the pod terminal');
  t.same(types(statusPatch('u', { phase: 'Running' }, { phase: 'Running', conditions: [disruption] })), [], 'not before');
  t.same(types(statusPatch('u', { phase: 'Failed' }, { phase: 'Failed', conditions: [disruption] })), [], 'not after');
});

t.test('mirror pod: a copy of metadata and spec, the mirror annotation, exactly one Node owner, bound to the node', async (t) => {
  const pod: Pod = {
    metadata: { name: 'web-n1', namespace: 'kube-system', uid: 'static-uid', labels: { app: 'web' }, annotations: { 'kubernetes.io/config.hash': 'h1', 'kubernetes.io/config.source': 'file' } },
    spec: { containers: [{ name: 'c', image: 'i' }] },
    status: { phase: 'Running' },
  };
  const m = mirrorPodOf(pod, 'h1', 'n1', 'node-uid');
  t.same(m.metadata, {
    name: 'web-n1',
    namespace: 'kube-system',
    labels: { app: 'web' },
    annotations: { 'kubernetes.io/config.hash': 'h1', 'kubernetes.io/config.source': 'file', 'kubernetes.io/config.mirror': 'h1' },
    ownerReferences: [{ apiVersion: 'v1', kind: 'Node', name: 'n1', uid: 'node-uid', controller: true }],
  });
  t.equal(m.spec?.nodeName, 'n1');
  t.equal(m.status, undefined, 'no status: the status sync writes it');
  t.notOk(m.metadata && 'uid' in m.metadata, 'the apiserver assigns the mirror its own UID');
});

t.test('MicroTime has six fractional digits; retry delays double to the cap and reset', async (t) => {
  t.equal(microTime(new Date('2026-01-02T03:04:05.678Z')), '2026-01-02T03:04:05.678000Z');
  const r = new RetryDelay({ initialMs: 100, maxMs: 350, jitter: 0 });
  t.same([r.next(), r.next(), r.next(), r.next()], [100, 200, 350, 350]);
  t.equal(r.failing, true);
  r.reset();
  t.equal(r.failing, false);
  t.equal(r.next(), 100);
});

t.test('node facts helpers', async (t) => {
  t.equal(goArch('x64'), 'amd64');
  t.equal(goArch('arm64'), 'arm64');
  t.equal(goArch('riscv64'), 'riscv64');
  t.equal(parseOsRelease('NAME="Debian"\nPRETTY_NAME="Debian GNU/Linux 12 (bookworm)"\n'), 'Debian GNU/Linux 12 (bookworm)');
  t.equal(parseOsRelease('PRETTY_NAME=Alpine\n'), 'Alpine');
  t.equal(parseOsRelease(''), 'Linux');
  t.equal(engineOf({ Version: '28.2.2' } as Docker.DockerVersion).runtimeVersion, 'docker://28.2.2');
  t.equal(engineOf({ Version: '4.3.1', Components: [{ Name: 'Podman Engine', Version: '4.3.1' }] } as unknown as Docker.DockerVersion).runtimeVersion, 'podman://4.3.1');
});
