import t from 'tap';
import type { Pod } from 'kubernetes-types/core/v1.js';
import { buildContainerConfig, podRuntimeInfo } from '../../../src/kubelet/container-config.js';

const deps = { volumes: undefined, objects: undefined, nodeIP: '10.0.0.1', warn: () => undefined };
const image = { id: 'sha256:x', user: '' };
const pod = (spec: Partial<NonNullable<Pod['spec']>>, container: Record<string, unknown> = {}): Pod => ({
  metadata: { name: 'p', namespace: 'ns', uid: 'u' },
  spec: { containers: [{ name: 'main', image: 'i', ...container }], ...spec },
});

t.test('env, expanded command and security in one config', async (t) => {
  const p = pod({ securityContext: { runAsUser: 7 } }, { env: [{ name: 'IP', valueFrom: { fieldRef: { fieldPath: 'status.podIP' } } }], command: ['echo', '$(IP)'] });
  const config = await buildContainerConfig(p, p.spec!.containers[0]!, image, ['172.17.0.5'], deps);
  t.same(config.env, ['IP=172.17.0.5']);
  t.same(config.command, ['echo', '172.17.0.5']);
  t.same(config.mounts, []);
  t.equal(config.security.user, '7');
});

t.test('host-network pods see the host IP as theirs', async (t) => {
  t.same(podRuntimeInfo(pod({ hostNetwork: true }), '10.0.0.1', []).podIPs, ['10.0.0.1']);
  t.same(podRuntimeInfo(pod({}), '10.0.0.1', ['172.17.0.5']).podIPs, ['172.17.0.5']);
});

t.test('refusals', async (t) => {
  const dev = pod({}, { volumeDevices: [{ name: 'blk', devicePath: '/dev/xvda' }] });
  await t.rejects(buildContainerConfig(dev, dev.spec!.containers[0]!, image, [], deps), {
    reason: 'CreateContainerConfigError',
    event: 'FailedMount',
    message: 'volumeDevice "blk" at /dev/xvda: raw block volumes are not supported by nodelet',
  });
  const vol = pod({ volumes: [{ name: 'v', emptyDir: {} }] });
  await t.rejects(buildContainerConfig(vol, vol.spec!.containers[0]!, image, [], deps), { message: 'volume "v": no volume manager is configured' });
  const nonRoot = pod({ securityContext: { runAsNonRoot: true } });
  await t.rejects(buildContainerConfig(nonRoot, nonRoot.spec!.containers[0]!, image, [], deps), { message: /image will run as root/ });
});
