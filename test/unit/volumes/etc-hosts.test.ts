import t from 'tap';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Pod } from '../../../src/api/types.js';
import { etcHostsContent, hostAliasEntries, managedHostsContent, mountsEtcHosts } from '../../../src/volumes/etc-hosts.js';

const localhostLines = [
  '# Kubernetes-managed hosts file.',
  '127.0.0.1\tlocalhost',
  '::1\tlocalhost ip6-localhost ip6-loopback',
  'fe00::0\tip6-localnet',
  'fe00::0\tip6-mcastprefix',
  'fe00::1\tip6-allnodes',
  'fe00::2\tip6-allrouters',
];

t.test('the managed file is the kubelet\'s, byte for byte', async (t) => {
  t.equal(managedHostsContent([], 'web', ''), localhostLines.join('\n') + '\n');
  t.equal(managedHostsContent(['10.0.0.5', 'fd00::5'], 'web', ''), [...localhostLines, '10.0.0.5\tweb', 'fd00::5\tweb'].join('\n') + '\n');
});

t.test('host aliases: one tab-separated line per IP after a blank line and a comment', async (t) => {
  t.equal(hostAliasEntries([]), '');
  t.equal(
    hostAliasEntries([{ ip: '123.45.67.89', hostnames: ['foo', 'bar'] }, { ip: '::2', hostnames: ['six'] }]),
    '\n# Entries added by HostAliases.\n123.45.67.89\tfoo\tbar\n::2\tsix\n',
  );
});

t.test('pod content: managed for the pod network, the node\'s file under its own header for hostNetwork', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'nodelet-hosts-'));
  const nodeFile = join(dir, 'hosts');
  await writeFile(nodeFile, '127.0.0.1 localhost\n10.1.2.3 node-a\n');
  const aliases = [{ ip: '1.2.3.4', hostnames: ['a'] }];
  const pod: Pod = { metadata: { name: 'p', uid: 'u' }, spec: { hostname: 'custom', hostAliases: aliases, containers: [] } };
  const managed = await etcHostsContent(pod, ['10.0.0.9'], nodeFile);
  t.ok(managed.startsWith('# Kubernetes-managed hosts file.\n'));
  t.match(managed, /\n10\.0\.0\.9\tcustom\n\n# Entries added by HostAliases\.\n1\.2\.3\.4\ta\n$/);
  const host = await etcHostsContent({ ...pod, spec: { ...pod.spec!, hostNetwork: true } }, ['10.0.0.9'], nodeFile);
  t.equal(host, '# Kubernetes-managed hosts file (host network).\n127.0.0.1 localhost\n10.1.2.3 node-a\n\n# Entries added by HostAliases.\n1.2.3.4\ta\n');
  await t.rejects(etcHostsContent({ ...pod, spec: { ...pod.spec!, hostNetwork: true } }, [], join(dir, 'missing')), { code: 'ENOENT' });
});

t.test('a container that mounts its own /etc/hosts keeps it', async (t) => {
  t.equal(mountsEtcHosts({ name: 'a' }), true);
  t.equal(mountsEtcHosts({ name: 'a', volumeMounts: [{ name: 'v', mountPath: '/etc/hosts-original' }] }), true);
  t.equal(mountsEtcHosts({ name: 'a', volumeMounts: [{ name: 'v', mountPath: '/etc/hosts' }] }), false);
});

t.test('the writer refuses a field with whitespace or control characters, whatever validation let through', async (t) => {
  const refused = { name: 'ContainerConfigError', reason: 'CreateContainerConfigError' };
  t.throws(() => hostAliasEntries([{ ip: '1.2.3.4\n6.6.6.6', hostnames: ['evil'] }]), { ...refused, message: /hostAliases ip "1\.2\.3\.4\\n6\.6\.6\.6" cannot be written to \/etc\/hosts/ });
  t.throws(() => hostAliasEntries([{ ip: '1.2.3.4', hostnames: ['a\tb'] }]), refused);
  t.throws(() => hostAliasEntries([{ ip: '1.2.3.4', hostnames: ['a\u2028b'] }]), refused);
  t.throws(() => hostAliasEntries([{ ip: '', hostnames: ['a'] }]), refused, 'an empty IP would shift the fields');
  t.throws(() => hostAliasEntries([{ hostnames: ['a'] }]), refused);
  t.throws(() => managedHostsContent(['10.0.0.5'], 'web\n6.6.6.6 evil', ''), refused);
  t.throws(() => managedHostsContent(['10.0.0.5'], 'web', '', 'svc.ns\n6.6.6.6'), refused);
  const pod: Pod = { metadata: { name: 'p', uid: 'u' }, spec: { hostAliases: [{ ip: '1.2.3.4', hostnames: ['ok', 'bad\r\n'] }], containers: [] } };
  await t.rejects(etcHostsContent(pod, ['10.0.0.9']), refused);
});
