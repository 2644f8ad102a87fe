import t, { type Test } from 'tap';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Pod } from '../../../src/api/types.js';
import { checkLimitsForResolvConf, podSandboxConfig } from '../../../src/kubelet/sandbox-config.js';
import { createLogger } from '../../../src/logging/index.js';
import { VolumeManager } from '../../../src/volumes/manager.js';
import type { NodeDNS } from '../../../src/volumes/resolv-conf.js';

const log = createLogger({ verbosity: 0, format: 'json' });
const node: NodeDNS = { clusterDNS: ['10.96.0.10'], clusterDomain: 'cluster.local', resolvConf: '/node/resolv.conf', nodeIPs: ['192.168.1.20'] };
const hostFile = 'nameserver 192.168.1.1\nsearch corp.example\n';

function pod(spec: Partial<NonNullable<Pod['spec']>> = {}, name = 'web-0'): Pod {
  return { metadata: { name, namespace: 'team-a', uid: 'uid-1' }, spec: { containers: [{ name: 'c' }], ...spec } };
}

function setup(t: Test, dns: NodeDNS = node) {
  const root = t.testdir();
  const volumes = new VolumeManager({ rootDir: root, log, clusterDomain: dns.clusterDomain, nodeResolvConfFile: join(root, 'node-etc-resolv.conf') });
  const warnings: string[] = [];
  const reads: string[] = [];
  const deps = {
    dns,
    volumes,
    warn: (on: string, reason: string, message: string) => warnings.push(`${on} ${reason}: ${message}`),
    readResolvConf: async (path: string) => {
      reads.push(path);
      if (path !== '/node/resolv.conf') throw new Error(`ENOENT: no such file or directory, open '${path}'`);
      return hostFile;
    },
  };
  const file = join(root, 'pods', 'uid-1', 'resolv.conf');
  return { root, volumes, warnings, reads, deps, file };
}

t.test('ClusterFirst: the pod\'s resolv.conf is written and mounted over /etc/resolv.conf', async (t) => {
  const { volumes, deps, file, warnings } = setup(t);
  const p = pod();
  t.same(await podSandboxConfig(p, deps), { hostname: 'web-0' });
  t.equal(await readFile(file, 'utf8'), 'search team-a.svc.cluster.local svc.cluster.local cluster.local corp.example\nnameserver 10.96.0.10\noptions ndots:5\n');
  t.same(warnings, []);
  t.same(await volumes.resolvConfMount(p, { name: 'c' }), { hostPath: file, containerPath: '/etc/resolv.conf', readOnly: false });
  t.equal(await volumes.resolvConfMount(p, { name: 'c', volumeMounts: [{ name: 'v', mountPath: '/etc/resolv.conf' }] }), undefined, 'its own mount wins');
  t.same(await volumes.resolvConfMount(pod({}, 'other'), { name: 'c' }), await volumes.resolvConfMount(p, { name: 'c' }), 'same UID, same file');
  t.equal(await volumes.resolvConfMount({ ...p, metadata: { ...p.metadata, uid: 'never-created' } }, { name: 'c' }), undefined, 'no file (a sandbox nodelet did not create): no mount');
});

t.test('without --cluster-dns: MissingClusterDNS on the node and the pod, the node\'s settings', async (t) => {
  const { deps, file, warnings } = setup(t, { ...node, clusterDNS: [] });
  await podSandboxConfig(pod(), deps);
  t.equal(await readFile(file, 'utf8'), 'search corp.example\nnameserver 192.168.1.1\n');
  t.same(warnings.map((w) => w.split(':')[0]), ['node MissingClusterDNS', 'pod MissingClusterDNS']);
  t.match(warnings[1], /^pod MissingClusterDNS: pod: "web-0_team-a\(uid-1\)"\. kubelet does not have ClusterDNS IP configured/);
});

t.test('all settings empty: the node\'s /etc/resolv.conf is copied, as CRI runtimes do', async (t) => {
  const { root, deps, file } = setup(t);
  await writeFile(join(root, 'node-etc-resolv.conf'), 'nameserver 127.0.0.53\n');
  await podSandboxConfig(pod({ dnsPolicy: 'None' }), deps);
  t.equal(await readFile(file, 'utf8'), 'nameserver 127.0.0.53\n');
});

t.test('an unreadable --resolv-conf fails the sandbox, whatever the policy', async (t) => {
  const { deps } = setup(t, { ...node, resolvConf: '/missing' });
  await t.rejects(podSandboxConfig(pod({ dnsPolicy: 'None', dnsConfig: { nameservers: ['1.1.1.1'] } }), deps), { message: /ENOENT/ });
  const none = setup(t, { ...node, resolvConf: '' });
  await podSandboxConfig(pod({ dnsPolicy: 'Default' }), none.deps);
  t.same(none.reads, [], '--resolv-conf "": nothing read');
  t.equal(await readFile(none.file, 'utf8'), 'search .\nnameserver 127.0.0.1\n');
});

t.test('hostname: the short name, the FQDN with setHostnameAsFQDN, none on the host network', async (t) => {
  const { deps } = setup(t);
  t.same(await podSandboxConfig(pod({ hostname: 'h', subdomain: 'peers' }), deps), { hostname: 'h' });
  t.same(await podSandboxConfig(pod({ hostname: 'h', subdomain: 'peers', setHostnameAsFQDN: true }), deps), { hostname: 'h.peers.team-a.svc.cluster.local' });
  t.same(await podSandboxConfig(pod({ setHostnameAsFQDN: true }), deps), { hostname: 'web-0' }, 'no subdomain: no FQDN');
  t.same(await podSandboxConfig(pod({ hostNetwork: true, subdomain: 'peers', setHostnameAsFQDN: true }), deps), {});
  const long = pod({ subdomain: 't', setHostnameAsFQDN: true }, 'hostfqdnveryveryveryverylongforfqdntobemorethan64bytes-12345');
  await t.rejects(podSandboxConfig(long, deps), {
    message: 'failed to construct FQDN from pod hostname and cluster domain, FQDN hostfqdnveryveryveryverylongforfqdntobemorethan64bytes-12345.t.team-a.svc.cluster.local is too long (64 characters is the max, 87 characters requested)',
  });
  await t.rejects(podSandboxConfig(pod({ subdomain: 'Not_A_Label' }), deps), { message: /^pod Subdomain "Not_A_Label" is not a valid DNS label/ });
});

t.test('the hosts file names the FQDN on pod IP lines, as the kubelet\'s', async (t) => {
  const { root, volumes } = setup(t);
  const p = pod({ hostname: 'h', subdomain: 'peers' });
  const mount = await volumes.etcHostsMount(p, { name: 'c' }, ['10.0.0.5']);
  t.equal(mount?.hostPath, join(root, 'pods', 'uid-1', 'etc-hosts'));
  t.match(await readFile(join(root, 'pods', 'uid-1', 'etc-hosts'), 'utf8'), /\nfe00::2\tip6-allrouters\n10\.0\.0\.5\th\.peers\.team-a\.svc\.cluster\.local\th\n$/);
  await volumes.etcHostsMount(pod({ hostname: 'h' }), { name: 'c' }, ['10.0.0.5']);
  t.match(await readFile(join(root, 'pods', 'uid-1', 'etc-hosts'), 'utf8'), /\n10\.0\.0\.5\th\n$/, 'no subdomain: the short name only');
  await volumes.etcHostsMount(p, { name: 'c' }, []);
  t.match(await readFile(join(root, 'pods', 'uid-1', 'etc-hosts'), 'utf8'), /\nfe00::2\tip6-allrouters\n$/, 'no pod IP (network none): no line');
});

t.test('checkLimitsForResolvConf: one node warning for an unreadable or over-long --resolv-conf, none otherwise', async (t) => {
  const warnings: string[] = [];
  const warn = (reason: string, message: string) => void warnings.push(`${reason}: ${message}`);
  await checkLimitsForResolvConf(node, warn, async () => hostFile);
  t.same(warnings, []);
  const many = `search ${Array.from({ length: 30 }, (_, i) => `d${i}.example`).join(' ')}\n`;
  await checkLimitsForResolvConf(node, warn, async () => many);
  t.same(warnings, ["CheckLimitsForResolvConf: Resolv.conf file '/node/resolv.conf' contains search line consisting of more than 29 domains!"]);
  await checkLimitsForResolvConf({ ...node, resolvConf: '/nonexistent/resolv.conf' }, warn);
  t.equal(warnings[1], 'CheckLimitsForResolvConf: open /nonexistent/resolv.conf: no such file or directory', 'Go\'s open error');
  await checkLimitsForResolvConf({ ...node, resolvConf: '' }, warn, async () => { throw new Error('not read'); });
  t.equal(warnings.length, 2, 'no --resolv-conf, no check');
});
