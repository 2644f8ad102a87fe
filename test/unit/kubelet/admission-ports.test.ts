import t from 'tap';
import type { Pod } from '../../../src/api/types.js';
import { admissionRefusal, hostPortsOf, portsConflict } from '../../../src/kubelet/admission.js';
import { waitFor } from '../../helpers/wait.js';
import { startKubelet } from './fixtures/kubelet.js';

const withPorts = (uid: string, ports: { hostPort?: number; hostIP?: string; protocol?: string; containerPort: number }[], init = false): Pod => ({
  metadata: { uid, name: uid, namespace: 'default' },
  spec: {
    ...(init ? { initContainers: [{ name: 'init', image: 'busybox', ports }] } : {}),
    containers: [{ name: 'app', image: 'busybox', ...(init ? {} : { ports }) }],
  },
});

t.test('host ports as the NodePorts plugin reads them: hostIP defaults to 0.0.0.0, protocol to TCP; ports without hostPort are none', async (t) => {
  t.same(hostPortsOf(withPorts('a', [{ containerPort: 80, hostPort: 8080 }, { containerPort: 53, hostPort: 53, protocol: 'UDP', hostIP: '10.0.0.1' }, { containerPort: 9090 }])), [
    { ip: '0.0.0.0', protocol: 'TCP', port: 8080 },
    { ip: '10.0.0.1', protocol: 'UDP', port: 53 },
  ]);
  t.same(hostPortsOf(withPorts('b', [{ containerPort: 80, hostPort: 81 }], true)), [{ ip: '0.0.0.0', protocol: 'TCP', port: 81 }], 'init containers too');
});

t.test('conflicts: same port and protocol, and the same address or either one 0.0.0.0', async (t) => {
  const p = (ip: string, protocol = 'TCP', port = 80) => ({ ip, protocol, port });
  t.ok(portsConflict(p('0.0.0.0'), p('10.0.0.1')));
  t.ok(portsConflict(p('10.0.0.1'), p('0.0.0.0')));
  t.ok(portsConflict(p('10.0.0.1'), p('10.0.0.1')));
  t.notOk(portsConflict(p('10.0.0.1'), p('10.0.0.2')), 'two addresses');
  t.notOk(portsConflict(p('0.0.0.0'), p('0.0.0.0', 'UDP')), 'two protocols');
  t.notOk(portsConflict(p('0.0.0.0'), p('0.0.0.0', 'TCP', 81)), 'two ports');
});

t.test('admission: a pod whose host port an admitted pod holds is refused with NodePorts and the kubelet\'s message', async (t) => {
  const first = withPorts('a', [{ containerPort: 80, hostPort: 8080 }]);
  t.same(admissionRefusal(withPorts('b', [{ containerPort: 80, hostPort: 8080, hostIP: '10.0.0.1' }]), [first]), {
    reason: 'NodePorts',
    message: "Predicate NodePorts failed: node(s) didn't have free ports for the requested pod ports",
  });
  t.equal(admissionRefusal(withPorts('c', [{ containerPort: 80, hostPort: 8080, protocol: 'UDP' }]), [first]), undefined);
  t.equal(admissionRefusal(withPorts('d', [{ containerPort: 80 }]), [first]), undefined);
});

t.test('through the sync: the second pod with the same hostPort fails (Pod was rejected: …); once the first is gone a new one is admitted', async (t) => {
  const { runtime, podManager, statusManager, recorder, kubelet, add } = startKubelet();
  t.teardown(() => kubelet.stop());
  // A network that publishes host ports (CNI with portmap).
  runtime.network = { readiness: { ready: true }, hostPorts: true };
  const first = withPorts('a', [{ containerPort: 80, hostPort: 8080 }]);
  add(first);
  await waitFor('a Running', () => (statusManager.getPodStatus('a')?.phase === 'Running' ? true : undefined), 5000, 5);
  add(withPorts('b', [{ containerPort: 80, hostPort: 8080 }]));
  const status = await waitFor('b Failed', () => (statusManager.getPodStatus('b')?.phase === 'Failed' ? statusManager.getPodStatus('b') : undefined), 5000, 5);
  t.equal(status?.reason, 'NodePorts');
  t.equal(status?.message, "Pod was rejected: Predicate NodePorts failed: node(s) didn't have free ports for the requested pod ports");
  t.ok(recorder.list('default').some((e) => e.reason === 'NodePorts' && e.involvedObject?.name === 'b'));
  t.equal(runtime.calls.filter((c) => c.startsWith('runSandbox')).length, 1, 'no sandbox for the refused pod');
  podManager.deletePod(first);
  kubelet.handlePodChanges({ added: [], updated: [], removed: [first] });
  await waitFor('a gone', () => (runtime.calls.includes('remove POD') ? true : undefined), 5000, 5);
  add(withPorts('c', [{ containerPort: 80, hostPort: 8080 }]));
  await waitFor('c Running', () => (statusManager.getPodStatus('c')?.phase === 'Running' ? true : undefined), 5000, 5);
});
