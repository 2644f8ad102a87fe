import t from 'tap';
import { ResultError, compareVersions, podIPsFromResult, resultAddresses } from '../../../src/network/cni/result.js';
import { fuzzSeed, prng } from '../../helpers/prng.js';

const NS = '/run/netns/pod1';

t.test('0.1.0 / 0.2.0: ip4 and ip6', async (t) => {
  t.same(podIPsFromResult({ cniVersion: '0.2.0', ip4: { ip: '10.1.0.5/16', gateway: '10.1.0.1' } }), ['10.1.0.5']);
  t.same(podIPsFromResult({ cniVersion: '0.1.0', ip6: { ip: 'fd00::5/64' }, ip4: { ip: '10.1.0.5/16' } }), ['10.1.0.5', 'fd00::5'], 'IPv4 first');
  t.same(podIPsFromResult({ cniVersion: '0.2.0' }), [], 'no IP at all');
  t.same(podIPsFromResult({ cniVersion: '0.2.0', ip4: null }), []);
});

t.test('0.3.x / 0.4.0: ips with version, filtered by the interface in the netns', async (t) => {
  const r = {
    cniVersion: '0.4.0',
    interfaces: [{ name: 'cni0', mac: 'aa' }, { name: 'veth1' }, { name: 'eth0', sandbox: NS }],
    ips: [
      { version: '4', interface: 0, address: '10.244.2.1/24' },
      { version: '6', interface: 2, address: 'fd00::3/64' },
      { version: '4', interface: 2, address: '10.244.2.3/24', gateway: '10.244.2.1' },
      { version: '4', interface: 2, address: '10.244.2.4/24' },
    ],
  };
  t.same(podIPsFromResult(r, NS), ['10.244.2.3', 'fd00::3'], 'at most one per family, IPv4 first, host-side addresses left out');
  t.same(podIPsFromResult(r), ['10.244.2.1', 'fd00::3'], 'without a netns nothing is filtered');
  t.same(podIPsFromResult({ cniVersion: '0.3.1', ips: [{ version: '4', address: '10.0.0.9/8' }] }, NS), ['10.0.0.9'], 'no interface index: accepted');
  t.same(podIPsFromResult({ cniVersion: '0.3.1', ips: [{ version: '4', interface: 0, address: '10.0.0.9/8' }] }, NS), ['10.0.0.9'], 'an index but no interfaces list: accepted');
});

t.test('1.x: ips without version, the family from the address', async (t) => {
  const r = { cniVersion: '1.0.0', interfaces: [{ name: 'eth0', sandbox: NS }], ips: [{ interface: 0, address: 'fd00::7/64' }, { interface: 0, address: '10.244.2.3/24' }] };
  t.same(podIPsFromResult(r, NS), ['10.244.2.3', 'fd00::7']);
  t.same(podIPsFromResult({ cniVersion: '1.0.0', ips: [] }), []);
  t.same(resultAddresses({ ips: [{ address: '10.0.0.1' }] }), [{ ip: '10.0.0.1', family: 4 }], 'an address without a prefix length');
});

t.test('malformed results: clear errors', async (t) => {
  const cases: [unknown, RegExp][] = [
    [null, /not a JSON object/],
    ['{"ips":[]}', /not a JSON object/],
    [[1], /not a JSON object/],
    [{ ips: 'x' }, /"ips" is not a list/],
    [{ ips: [1] }, /ips\[0\]: not an object/],
    [{ ips: [{}] }, /address is not a string/],
    [{ ips: [{ address: 7 }] }, /address is not a string/],
    [{ ips: [{ address: 'bogus/24' }] }, /invalid address/],
    [{ ips: [{ address: '10.0.0.1/33' }] }, /invalid prefix length/],
    [{ ips: [{ address: '10.0.0.1/x' }] }, /invalid prefix length/],
    [{ ips: [{ version: '5', address: '10.0.0.1/8' }] }, /invalid "version"/],
    [{ ips: [{ version: '6', address: '10.0.0.1/8' }] }, /is not IPv6/],
    [{ ips: [{ interface: -1, address: '10.0.0.1/8' }] }, /invalid "interface"/],
    [{ ips: [{ interface: 1.5, address: '10.0.0.1/8' }] }, /invalid "interface"/],
    [{ ips: [{ interface: '0', address: '10.0.0.1/8' }] }, /invalid "interface"/],
    [{ interfaces: [], ips: [{ interface: 3, address: '10.0.0.1/8' }] }, /names no interface/],
    [{ interfaces: {}, ips: [] }, /"interfaces" is not a list/],
    [{ ip4: 'x' }, /"ip4" is not an object/],
    [{ ip4: { ip: 'fd00::1/64' } }, /is not IPv4/],
    [{ ip6: { ip: 12 } }, /address is not a string/],
  ];
  for (const [r, re] of cases) t.throws(() => podIPsFromResult(r, NS), re, JSON.stringify(r));
  t.throws(() => podIPsFromResult(undefined), ResultError);
});

t.test('fuzz: random JSON-ish values either parse to IPs or throw a ResultError, never anything else', async (t) => {
  const seed = fuzzSeed();
  t.comment(`seed ${seed} (FUZZ_SEED replays it)`);
  const rand = prng(seed);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rand() * xs.length)] as T;
  const atoms: unknown[] = [null, undefined, 0, -1, 1.5, 2, '', '4', '6', 'x', '10.0.0.1/24', 'fd00::1/64', '1.2.3.4', NS, true, [], {}];
  const value = (depth: number): unknown => {
    const r = rand();
    if (depth > 3 || r < 0.4) return pick(atoms);
    if (r < 0.6) return Array.from({ length: Math.floor(rand() * 4) }, () => value(depth + 1));
    const keys = ['ips', 'interfaces', 'ip4', 'ip6', 'version', 'address', 'interface', 'sandbox', 'ip', 'cniVersion'];
    const o: Record<string, unknown> = {};
    for (let i = Math.floor(rand() * 5); i > 0; i--) o[pick(keys)] = value(depth + 1);
    return o;
  };
  let parsed = 0;
  let refused = 0;
  for (let i = 0; i < 5000; i++) {
    const v = value(0);
    try {
      const ips = podIPsFromResult(v, NS);
      if (!Array.isArray(ips) || ips.length > 2 || ips.some((ip) => typeof ip !== 'string' || ip.includes('/'))) t.fail(`bad answer ${JSON.stringify(ips)}`);
      parsed++;
    } catch (err) {
      if (!(err instanceof ResultError)) t.fail(`not a ResultError for ${JSON.stringify(v)}: ${String(err)}`);
      refused++;
    }
  }
  t.ok(parsed > 0 && refused > 0, `${parsed} parsed, ${refused} refused`);
});

t.test('compareVersions', async (t) => {
  t.ok(compareVersions('0.4.0', '0.4.0') === 0);
  t.ok(compareVersions('1.0.0', '0.4.0') > 0);
  t.ok(compareVersions('0.3.1', '0.4.0') < 0);
  t.ok(compareVersions('0.10.0', '0.4.0') > 0, 'numeric, not lexical');
});
