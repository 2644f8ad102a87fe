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

t.test('a probe or hook nodelet cannot run refuses the container before anything is set up, instead of running it unprobed', async (t) => {
  const refused = async (container: Record<string, unknown>, message: string) => {
    // The volume would fail too (no volume manager): the probe is refused first.
    const p = pod({ volumes: [{ name: 'v', emptyDir: {} }] }, container);
    await t.rejects(buildContainerConfig(p, p.spec!.containers[0]!, image, [], deps), { name: 'ContainerConfigError', reason: 'CreateContainerConfigError', event: undefined, message }, message);
  };
  await refused({ livenessProbe: { httpGet: { port: 80, host: 'example.com' } } }, 'livenessProbe: httpGet probe: host "example.com" is not an IP address: nodelet connects to IP addresses (or localhost) only, it resolves no names');
  await refused({ readinessProbe: { httpGet: { port: 80, protocol: 'HTTP2' } } }, 'readinessProbe: httpGet probe: protocol "HTTP2" is not supported by nodelet (the alpha H2CContainerProbe feature; only HTTP1)');
  await refused({ startupProbe: { grpc: { port: 9000, mode: 'TLS' } } }, 'startupProbe: grpc probe: mode "TLS" is not supported by nodelet (the alpha GRPCContainerProbeTLS feature; only Plaintext)');
  await refused({ lifecycle: { preStop: { httpGet: { port: 80, path: '/q', protocol: 'HTTP2' } } } }, 'lifecycle.preStop.httpGet: protocol "HTTP2" is not supported by nodelet (the alpha H2CContainerProbe feature; only HTTP1)');
  const ok = pod({}, {
    livenessProbe: { httpGet: { port: 80, protocol: 'HTTP1' } },
    readinessProbe: { grpc: { port: 9000, mode: 'Plaintext' } },
    startupProbe: { tcpSocket: { port: 80, host: '10.0.0.9' } },
    lifecycle: { postStart: { httpGet: { port: 80, path: '/', protocol: 'HTTP1' } }, preStop: { httpGet: { port: 80, path: '/', host: 'example.com' } } },
  });
  await t.resolves(buildContainerConfig(ok, ok.spec!.containers[0]!, image, [], deps), 'HTTP1, Plaintext, an IP host run; a hook\'s named host fails the hook when it runs, as before');
});

t.test('an environment or command line execve could never take is refused before Docker (ARG_MAX, MAX_ARG_STRLEN)', async (t) => {
  const { MAX_ARG_STRLEN, MAX_EXEC_BYTES, checkExecLimits } = await import('../../../src/kubelet/container-config.js');
  const refused = { name: 'ContainerConfigError', reason: 'CreateContainerConfigError' };
  // A manifest with 2.7 MB of env entries.
  const env = Array.from({ length: 36_000 }, (_, i) => ({ name: `VAR_${i}`, value: 'x'.repeat(64) }));
  const big = pod({}, { env });
  // The container's expansion share (expansion.ts) runs out first, before the strings are built.
  await t.rejects(buildContainerConfig(big, big.spec!.containers[0]!, image, [], deps), { ...refused, message: /^env VAR_\d+: \$\(VAR\) expansion would exceed 2097152 bytes/ });
  t.throws(() => checkExecLimits(Array.from({ length: 36_000 }, (_, i) => `VAR_${i}=${'x'.repeat(64)}`), []), {
    ...refused,
    message: /environment and command line take \d+ bytes, more than the 2097152 bytes a process can be started with \(ARG_MAX\): 36000 environment variables/,
  });
  const long = pod({}, { env: [{ name: 'LONG', value: 'x'.repeat(MAX_ARG_STRLEN) }] });
  await t.rejects(buildContainerConfig(long, long.spec!.containers[0]!, image, [], deps), { ...refused, message: /environment variable "LONG" is 131078 bytes, more than the 131072 bytes/ });
  t.throws(() => checkExecLimits([], ['sh', 'y'.repeat(MAX_ARG_STRLEN)]), { ...refused, message: /^command or argument is 131073 bytes/ });
  t.doesNotThrow(() => checkExecLimits(['A=' + 'x'.repeat(MAX_ARG_STRLEN - 4)], ['sh']), 'the longest string that fits');
  t.doesNotThrow(() => checkExecLimits(Array.from({ length: 1000 }, (_, i) => `V${i}=${'x'.repeat(1000)}`), []), '1 MB of env is fine');
  t.ok(MAX_EXEC_BYTES === 2 * 1024 * 1024);
});
