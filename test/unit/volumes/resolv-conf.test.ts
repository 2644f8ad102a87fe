import t from 'tap';
import type { Pod } from '../../../src/api/types.js';
import {
  fitDNSLimits,
  mergeDNSOptions,
  mountsResolvConf,
  parseResolvConf,
  podDNSConfig,
  resolvConfContent,
  resolvConfLimitProblem,
  type DNSEvent,
  type NodeDNS,
} from '../../../src/volumes/resolv-conf.js';

const HOST = '# the node\nnameserver 192.168.1.1\nnameserver 192.168.1.2\nsearch corp.example. lab.example\noptions timeout:2 attempts:3\n';
const node: NodeDNS = { clusterDNS: ['10.96.0.10'], clusterDomain: 'cluster.local', resolvConf: '/etc/resolv.conf', nodeIPs: ['192.168.1.20'] };
const noClusterDNS: NodeDNS = { ...node, clusterDNS: [] };

function pod(spec: Partial<NonNullable<Pod['spec']>> = {}): Pod {
  return { metadata: { name: 'web', namespace: 'team-a', uid: 'u-1' }, spec: { containers: [], ...spec } };
}

function dns(p: Pod, n: NodeDNS = node, host = HOST): { config: ReturnType<typeof podDNSConfig>; events: DNSEvent[] } {
  const events: DNSEvent[] = [];
  return { config: podDNSConfig(p, n, host, events), events };
}

const missingNode = 'kubelet does not have ClusterDNS IP configured and cannot create Pod using "ClusterFirst" policy. Falling back to "Default" policy.';

t.test('parseResolvConf: nameservers accumulate, the last search and options lines win, trailing dots go', async (t) => {
  t.same(parseResolvConf(HOST), { servers: ['192.168.1.1', '192.168.1.2'], searches: ['corp.example', 'lab.example'], options: ['timeout:2', 'attempts:3'] });
  t.same(parseResolvConf('search a b\nsearch c\n  options ndots:1\noptions rotate\n#nameserver 9.9.9.9\ndomain x\n'), { servers: [], searches: ['c'], options: ['rotate'] });
  t.same(parseResolvConf(''), { servers: [], searches: [], options: [] });
  t.throws(() => parseResolvConf('nameserver\n'), { message: 'nameserver list is empty ' });
  t.throws(() => parseResolvConf('nameserver\nnameserver\n'), { message: '[nameserver list is empty , nameserver list is empty ]' });
});

t.test('ClusterFirst with --cluster-dns: cluster nameservers, cluster searches before the node\'s, ndots:5', async (t) => {
  for (const p of [pod(), pod({ dnsPolicy: 'ClusterFirst' }), pod({ dnsPolicy: 'ClusterFirstWithHostNet', hostNetwork: true }), pod({ dnsPolicy: 'ClusterFirstWithHostNet' })]) {
    const { config, events } = dns(p);
    t.same(config, {
      servers: ['10.96.0.10'],
      searches: ['team-a.svc.cluster.local', 'svc.cluster.local', 'cluster.local', 'corp.example', 'lab.example'],
      options: ['ndots:5'],
    }, `${p.spec?.dnsPolicy ?? '(absent)'} hostNetwork=${p.spec?.hostNetwork === true}`);
    t.same(events, []);
  }
  t.equal(
    resolvConfContent(dns(pod()).config),
    'search team-a.svc.cluster.local svc.cluster.local cluster.local corp.example lab.example\nnameserver 10.96.0.10\noptions ndots:5\n',
    'the file: search, one nameserver line each, options',
  );
  t.same(dns(pod(), { ...node, clusterDomain: '' }).config.searches, ['corp.example', 'lab.example'], 'no cluster domain: the node\'s searches only');
  t.same(dns(pod(), { ...node, clusterDNS: ['10.0.0.1', 'fd00::a'] }).config.servers, ['10.0.0.1', 'fd00::a']);
  t.same(dns(pod(), node, 'search cluster.local other\n').config.searches, ['team-a.svc.cluster.local', 'svc.cluster.local', 'cluster.local', 'other'], 'duplicates omitted');
});

t.test('ClusterFirst without --cluster-dns: MissingClusterDNS on the node and the pod, then Default', async (t) => {
  const { config, events } = dns(pod(), noClusterDNS);
  t.same(config, parseResolvConf(HOST));
  t.same(events, [
    { on: 'node', reason: 'MissingClusterDNS', message: missingNode },
    { on: 'pod', reason: 'MissingClusterDNS', message: `pod: "web_team-a(u-1)". ${missingNode}` },
  ]);
  t.equal(dns(pod({ dnsPolicy: 'ClusterFirstWithHostNet', hostNetwork: true }), noClusterDNS).events.length, 2, 'ClusterFirstWithHostNet too');
  t.same(dns(pod({ dnsPolicy: 'Default' }), noClusterDNS).events, [], 'Default: no event');
});

t.test('Default, and ClusterFirst on the host network: the node\'s resolv.conf', async (t) => {
  for (const p of [pod({ dnsPolicy: 'Default' }), pod({ hostNetwork: true }), pod({ dnsPolicy: 'ClusterFirst', hostNetwork: true })]) {
    const { config, events } = dns(p);
    t.same(config, parseResolvConf(HOST));
    t.same(events, []);
  }
  t.equal(resolvConfContent(dns(pod({ dnsPolicy: 'Default' })).config), 'search corp.example lab.example\nnameserver 192.168.1.1\nnameserver 192.168.1.2\noptions timeout:2 attempts:3\n');
});

t.test('--resolv-conf "": a localhost nameserver of the node IP\'s family and search "."', async (t) => {
  const none = { ...node, resolvConf: '' };
  t.same(dns(pod({ dnsPolicy: 'Default' }), none, 'ignored').config, { servers: ['127.0.0.1'], searches: ['.'], options: [] });
  t.same(dns(pod({ dnsPolicy: 'Default' }), { ...none, nodeIPs: ['fd00::1'] }).config.servers, ['::1']);
  t.same(dns(pod({ dnsPolicy: 'Default' }), { ...none, nodeIPs: [] }).config.servers, ['127.0.0.1']);
  t.same(dns(pod(), { ...none, clusterDNS: [] }).config, { servers: ['127.0.0.1'], searches: ['.'], options: [] }, 'ClusterFirst falling back');
  t.same(dns(pod(), none).config, { servers: ['10.96.0.10'], searches: ['team-a.svc.cluster.local', 'svc.cluster.local', 'cluster.local'], options: ['ndots:5'] });
});

t.test('None: only dnsConfig', async (t) => {
  const dnsConfig = { nameservers: ['1.1.1.1'], searches: ['ns1.svc.cluster.local', 'my.dns.search.suffix'], options: [{ name: 'ndots', value: '2' }, { name: 'edns0' }] };
  const { config, events } = dns(pod({ dnsPolicy: 'None', dnsConfig }), noClusterDNS);
  t.same(config, { servers: ['1.1.1.1'], searches: ['ns1.svc.cluster.local', 'my.dns.search.suffix'], options: ['ndots:2', 'edns0'] });
  t.same(events, [], 'no MissingClusterDNS for None');
  t.equal(resolvConfContent(config), 'search ns1.svc.cluster.local my.dns.search.suffix\nnameserver 1.1.1.1\noptions ndots:2 edns0\n');
  t.same(dns(pod({ dnsPolicy: 'None' })).config, { servers: [], searches: [], options: [] });
  t.equal(resolvConfContent({ servers: [], searches: [], options: [] }), '', 'all empty: no content (the runtime copies the node\'s file)');
});

t.test('dnsConfig is appended: duplicates dropped, options merged by name (the pod\'s win)', async (t) => {
  const { config } = dns(pod({ dnsConfig: { nameservers: ['10.96.0.10', '8.8.8.8'], searches: ['cluster.local', 'extra.example'], options: [{ name: 'ndots', value: '1' }, { name: 'single-request-reopen' }] } }));
  t.same(config, {
    servers: ['10.96.0.10', '8.8.8.8'],
    searches: ['team-a.svc.cluster.local', 'svc.cluster.local', 'cluster.local', 'corp.example', 'lab.example', 'extra.example'],
    options: ['ndots:1', 'single-request-reopen'],
  });
  t.same(dns(pod({ dnsPolicy: 'Default', dnsConfig: { options: [{ name: 'timeout' }, { name: 'rotate' }] } })).config.options, ['timeout', 'attempts:3', 'rotate'], 'an option without a value drops the old value');
  t.same(mergeDNSOptions(['a', 'b:1', 'a:2'], []), ['a:2', 'b:1'], 'the last value of a name wins, at its first position');
  t.same(mergeDNSOptions([], [{ name: 'x', value: '' }]), ['x']);
});

t.test('limits: 3 nameservers, 32 search paths, no path over 253, the line at most 2048 characters', async (t) => {
  const events: DNSEvent[] = [];
  const four = fitDNSLimits({ servers: ['1.1.1.1', '2.2.2.2', '3.3.3.3', '4.4.4.4'], searches: [], options: [] }, events);
  t.same(four.servers, ['1.1.1.1', '2.2.2.2', '3.3.3.3']);
  t.same(events, [{ on: 'pod', reason: 'DNSConfigForming', message: 'Nameserver limits were exceeded, some nameservers have been omitted, the applied nameserver line is: 1.1.1.1 2.2.2.2 3.3.3.3' }]);

  const many = Array.from({ length: 40 }, (_, i) => `d${i}.example`);
  const cut: DNSEvent[] = [];
  const fit = fitDNSLimits({ servers: [], searches: many, options: [] }, cut);
  t.same(fit.searches, many.slice(0, 32));
  t.same(cut, [{ on: 'pod', reason: 'DNSConfigForming', message: `Search Line limits were exceeded, some search paths have been omitted, the applied search line is: ${many.slice(0, 32).join(' ')}` }]);

  const long = `${'a'.repeat(250)}.com`;
  const noLong: DNSEvent[] = [];
  t.same(fitDNSLimits({ servers: [], searches: ['ok.example', long, 'b.example'], options: [] }, noLong).searches, ['ok.example', 'b.example'], 'a path over 253 characters is dropped');
  t.equal(noLong.length, 1);

  // 9 paths of 250 characters: 9 * 251 - 1 = 2258 > 2048; cutting from the end until it fits leaves 8 (2007).
  const wide = Array.from({ length: 9 }, (_, i) => `${String(i)}${'x'.repeat(245)}.com`);
  const chars: DNSEvent[] = [];
  const fitChars = fitDNSLimits({ servers: [], searches: wide, options: [] }, chars).searches;
  t.same(fitChars, wide.slice(0, 8));
  t.ok(fitChars.join(' ').length <= 2048);
  t.equal(chars.length, 1);

  const ok: DNSEvent[] = [];
  fitDNSLimits({ servers: ['1.1.1.1', '2.2.2.2', '3.3.3.3'], searches: many.slice(0, 32), options: [] }, ok);
  t.same(ok, [], 'exactly at the limits: no event');

  const viaPod = dns(pod({ dnsConfig: { nameservers: ['8.8.8.8', '8.8.4.4', '9.9.9.9'] } }));
  t.same(viaPod.config.servers, ['10.96.0.10', '8.8.8.8', '8.8.4.4'], 'the cluster nameserver plus dnsConfig, cut to three');
  t.equal(viaPod.events[0]?.reason, 'DNSConfigForming');
});

t.test('a container that mounts its own /etc/resolv.conf keeps it', async (t) => {
  t.equal(mountsResolvConf({ name: 'c' }), true);
  t.equal(mountsResolvConf({ name: 'c', volumeMounts: [{ name: 'v', mountPath: '/etc/resolv.conf' }] }), false);
  t.equal(mountsResolvConf({ name: 'c', volumeMounts: [{ name: 'v', mountPath: '/etc' }] }), true);
});

t.test('CheckLimitsForResolvConf: the node file\'s search line against what pods can take', async (t) => {
  const search = (n: number, len = 10) => `nameserver 10.0.0.1\nsearch ${Array.from({ length: n }, (_, i) => `d${i}.${'x'.repeat(len)}`).join(' ')}\n`;
  t.equal(resolvConfLimitProblem('/etc/resolv.conf', search(29), 'cluster.local'), undefined, '29 leave room for the 3 cluster domains');
  t.equal(resolvConfLimitProblem('/etc/resolv.conf', search(30), 'cluster.local'), "Resolv.conf file '/etc/resolv.conf' contains search line consisting of more than 29 domains!");
  t.equal(resolvConfLimitProblem('/etc/resolv.conf', search(32), ''), undefined, 'without a cluster domain all 32');
  t.equal(resolvConfLimitProblem('/r', `search ${'a'.repeat(254)}\n`, ''), 'Resolv.conf file "/r" contains a search path which length is more than allowed 253 chars!');
  t.equal(resolvConfLimitProblem('/r', search(20, 120), ''), "Resolv.conf file '/r' contains search line which length is more than allowed 2048 chars!");
  t.equal(resolvConfLimitProblem('/r', 'nameserver\n', ''), 'nameserver list is empty ', 'a parse error is the problem');
});

t.test('resolvConfContent refuses a word with whitespace or control characters (no injected lines)', async (t) => {
  const bad = [
    { servers: ['1.1.1.1\nnameserver 6.6.6.6'], searches: [], options: [] },
    { servers: [], searches: ['a.example b'], options: [] },
    { servers: [], searches: [], options: ['ndots:2\nnameserver 6.6.6.6'] },
    { servers: [], searches: [], options: ['x\u0000'] },
    { servers: [''], searches: [], options: [] },
  ];
  for (const config of bad) t.throws(() => resolvConfContent(config), /cannot be written to resolv\.conf: it must be a single word without whitespace or control characters/);
  // What podDNSConfig makes of a pod whose option value slipped past validation.
  const p = pod({ dnsPolicy: 'None', dnsConfig: { nameservers: ['1.1.1.1'], options: [{ name: 'ndots', value: '1\nnameserver 6.6.6.6' }] } });
  t.throws(() => resolvConfContent(dns(p).config), /option "ndots:1\\nnameserver 6\.6\.6\.6"/);
});
