import t from 'tap';
import type { Pod } from '../../../src/api/types.js';
import { nodenameForKernel, podHostname, podHostnameAndDomain } from '../../../src/api/names.js';

function pod(name: string, spec: Partial<NonNullable<Pod['spec']>> = {}): Pod {
  return { metadata: { name, namespace: 'ns' }, spec: { containers: [], ...spec } };
}

t.test('hostname: spec.hostname, else the pod name; over 63 characters cut, trailing - and . dropped', async (t) => {
  t.same(podHostnameAndDomain(pod('web'), 'cluster.local'), { hostname: 'web', domain: '' });
  t.same(podHostnameAndDomain(pod('web', { hostname: 'front' }), 'cluster.local'), { hostname: 'front', domain: '' });
  t.same(podHostnameAndDomain(pod('web', { hostname: '' }), ''), { hostname: 'web', domain: '' }, 'an empty hostname is none');
  const long = `${'a'.repeat(61)}-.bcd`;
  t.equal(podHostnameAndDomain(pod(long), '').hostname, 'a'.repeat(61));
  t.equal(podHostname(pod(long)), 'a'.repeat(61));
  const exact = 'b'.repeat(63);
  t.equal(podHostnameAndDomain(pod(exact), '').hostname, exact);
  t.equal(podHostname(pod('web', { hostname: '' })), 'web');
});

t.test('subdomain: <subdomain>.<namespace>.svc.<clusterDomain>', async (t) => {
  t.same(podHostnameAndDomain(pod('web-0', { subdomain: 'peers' }), 'cluster.local'), { hostname: 'web-0', domain: 'peers.ns.svc.cluster.local' });
  t.same(podHostnameAndDomain(pod('web-0', { hostname: 'h', subdomain: 'peers' }), 'example.org'), { hostname: 'h', domain: 'peers.ns.svc.example.org' });
  t.equal(podHostnameAndDomain(pod('web-0', { subdomain: 'peers' }), '').domain, 'peers.ns.svc.', 'formed as the kubelet does without a cluster domain');
});

t.test('an invalid hostname or subdomain is the kubelet\'s error', async (t) => {
  t.throws(() => podHostnameAndDomain(pod('web', { hostname: 'Bad_Name' }), ''), { message: /^pod Hostname "Bad_Name" is not a valid DNS label: a lowercase RFC 1123 label must consist of/ });
  t.throws(() => podHostnameAndDomain(pod('web', { subdomain: 'a.b' }), ''), { message: 'pod Subdomain "a.b" is not a valid DNS label: must not contain dots' });
});

t.test('setHostnameAsFQDN: the FQDN as kernel hostname, at most 64 characters', async (t) => {
  t.equal(nodenameForKernel('web-0', 'peers.ns.svc.cluster.local', true), 'web-0.peers.ns.svc.cluster.local');
  t.equal(nodenameForKernel('web-0', 'peers.ns.svc.cluster.local', false), 'web-0');
  t.equal(nodenameForKernel('web-0', 'peers.ns.svc.cluster.local', undefined), 'web-0');
  t.equal(nodenameForKernel('web-0', '', true), 'web-0', 'no subdomain: no effect');
  const domain = 't.ns.svc.cluster.local'; // 22 characters
  const fits = 'h'.repeat(64 - domain.length - 1);
  t.equal(nodenameForKernel(fits, domain, true).length, 64, 'exactly 64 fits');
  const over = `${fits}x`;
  t.throws(() => nodenameForKernel(over, domain, true), {
    message: `failed to construct FQDN from pod hostname and cluster domain, FQDN ${over}.${domain} is too long (64 characters is the max, 65 characters requested)`,
  });
});
