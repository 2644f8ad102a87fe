import t from 'tap';
import { BUSYBOX } from '../helpers/docker.js';
import { startTestNode } from '../helpers/nodelet.js';
import { capabilityBounds, hostDevices, ownCapabilityBounds } from '../../src/runtime/docker/privileged.js';

/**
 * A privileged container through the real engine, on a host whose bounding set may lack a
 * capability (this project's CI machine lacks CAP_SYS_RESOURCE, where Docker's own privileged
 * mode fails to start): it runs, holds every capability the host grants (and none it does not),
 * is not confined (mount works, `/proc` is not masked) and sees the host's devices; its unprivileged
 * neighbour keeps Docker's default set.
 */

const manifest = `apiVersion: v1
kind: Pod
metadata: { name: priv }
spec:
  terminationGracePeriodSeconds: 0
  containers:
    - name: privileged
      image: ${BUSYBOX}
      imagePullPolicy: Never
      command: ["sleep", "3600"]
      securityContext: { privileged: true }
    - name: plain
      image: ${BUSYBOX}
      imagePullPolicy: Never
      command: ["sleep", "3600"]
`;

t.test('a privileged container runs with what the host can grant', async (t) => {
  const node = await startTestNode(t);
  await node.writeManifest('priv.yaml', manifest);
  const pod = await node.waitFor('both containers running', async () => {
    const p = await node.pod('priv');
    const statuses = p?.status?.containerStatuses ?? [];
    const failed = statuses.find((c) => c.state?.terminated || c.lastState?.terminated);
    if (failed) throw new Error(`${failed.name} did not run: ${JSON.stringify(failed.state ?? failed.lastState)}`);
    return statuses.length === 2 && statuses.every((c) => c.state?.running) ? p : undefined;
  }, 60_000);
  const run = async (container: string, cmd: string) => {
    const res = await fetch(`${node.url}/run/default/${pod?.metadata?.name ?? ''}/${container}?cmd=${encodeURIComponent(cmd)}`, { method: 'POST' });
    return { status: res.status, text: await res.text() };
  };
  const capsOf = async (container: string) => {
    const { text } = await run(container, 'cat /proc/self/status');
    const hex = /^CapEff:\s*([0-9a-f]+)$/m.exec(text)?.[1];
    t.ok(hex, `${container}: CapEff read`);
    return new Set(capabilityBounds(hex ?? '0', 40).granted);
  };

  const own = await ownCapabilityBounds();
  const privileged = await capsOf('privileged');
  t.same([...privileged].filter((c) => !own.granted.includes(c)), [], 'no capability the host does not grant');
  for (const cap of ['SYS_ADMIN', 'NET_ADMIN', 'SYS_MODULE', 'SYS_PTRACE', 'MKNOD', 'AUDIT_READ']) {
    if (own.granted.includes(cap)) t.ok(privileged.has(cap), `privileged holds ${cap}`);
  }
  t.comment(`host lacks: ${own.missing.join(', ') || 'nothing'}; the container holds ${privileged.size}`);

  const plain = await capsOf('plain');
  t.notOk(plain.has('SYS_ADMIN'), 'the unprivileged neighbour: no SYS_ADMIN');
  t.ok(plain.has('CHOWN') && plain.size < 20, `Docker's default set (${plain.size})`);

  const mounted = await run('privileged', 'mount -t tmpfs none /tmp');
  t.equal(mounted.status, 200, `mount works (no seccomp or AppArmor confinement): ${mounted.text}`);
  t.not((await run('plain', 'mount -t tmpfs none /tmp')).status, 200, 'not in the unprivileged one');

  // Docker masks /proc/keys (with /dev/null's tmpfs twin) in every container that is not privileged.
  const masked = async (container: string) => / \/proc\/keys /.test((await run(container, 'cat /proc/self/mountinfo')).text);
  t.equal(await masked('privileged'), false, '/proc/keys is not masked');
  t.equal(await masked('plain'), true, 'masked in the unprivileged one');

  // A host device Docker does not give every container.
  const defaults = new Set(['/dev/null', '/dev/zero', '/dev/full', '/dev/random', '/dev/urandom', '/dev/tty', '/dev/ptmx']);
  const device = (await hostDevices()).find((d) => !defaults.has(d) && !d.startsWith('/dev/tty'));
  if (device) {
    t.equal((await run('privileged', `ls ${device}`)).status, 200, `host device ${device} is there`);
    t.not((await run('plain', `ls ${device}`)).status, 200, `not in the unprivileged one`);
  }
});
