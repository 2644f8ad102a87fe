import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t, { type Test } from 'tap';
import { createLogger } from '../../../src/logging/index.js';
import { CNINetworkPlugin } from '../../../src/network/cni/index.js';
import { KeyedMutex } from '../../../src/network/cni/keyed-mutex.js';

/**
 * The list logic with fake plugins (shell scripts that record what they were given): no real
 * plugin runs, nothing touches a network.
 */

// Runs may overlap (loopback beside the list): each takes the lock for its whole run, so the
// calls are numbered in the order they ran; the pod IP counts the list's calls only, whenever
// loopback ran.
const FAKE = `#!/bin/sh
exec 9>>"$ROOT/lock"
flock 9
type=$(basename "$0")
calls="$ROOT/calls"
n=$(( $(ls "$calls" | wc -l) / 2 ))
m=$(( $(ls "$calls" | grep -vc -- -loopback-) / 2 + 1 ))
f="$calls/$(printf %04d "$n")-$type-$CNI_COMMAND-$CNI_IFNAME"
cat > "$f.json"
printf '%s' "$CNI_NETNS" > "$f.netns"
if [ -f "$ROOT/fail-$type-$CNI_COMMAND" ]; then cat "$ROOT/fail-$type-$CNI_COMMAND"; exit 1; fi
[ "$CNI_COMMAND" = ADD ] || exit 0
if [ "$CNI_IFNAME" = lo ]; then echo '{"cniVersion":"0.2.0","ip4":{"ip":"127.0.0.1/8"}}'; exit 0; fi
printf '{"cniVersion":"1.0.0","interfaces":[{"name":"veth-host"},{"name":"eth0","sandbox":"%s"}],"ips":[{"interface":0,"address":"10.9.0.1/24"},{"interface":1,"address":"10.9.0.%s/24"}],"by":"%s"}' "$CNI_NETNS" "$m" "$type"
`;

interface Call {
  readonly type: string;
  readonly command: string;
  readonly ifName: string;
  readonly netns: string;
  readonly conf: Record<string, unknown>;
}

function fixture(t: Test, list: Record<string, unknown>) {
  const root = mkdtempSync(join(tmpdir(), 'nodelet-cni-fake-'));
  t.teardown(() => rmSync(root, { recursive: true, force: true }));
  const bin = join(root, 'bin');
  const confDir = join(root, 'net.d');
  const cacheDir = join(root, 'cache');
  for (const d of [bin, confDir, join(root, 'calls')]) mkdirSync(d);
  for (const type of ['loopback', 'bridge', 'portmap']) {
    writeFileSync(join(bin, type), FAKE.replace('$ROOT', root).replace(/\$ROOT/g, root));
    chmodSync(join(bin, type), 0o755);
  }
  writeFileSync(join(confDir, '10-net.conflist'), JSON.stringify(list));
  const logs: string[] = [];
  const log = createLogger({ verbosity: 4, format: 'json', destination: { write: (l: string) => void logs.push(l) } });
  const plugin = new CNINetworkPlugin({ confDir, binDirs: [join(root, 'nobin'), bin], cacheDir, log, reloadMs: 60_000 });
  t.teardown(() => plugin.stop());
  const calls = (): Call[] => {
    const dir = join(root, 'calls');
    return readdirSync(dir)
      .filter((f) => f.endsWith('.json'))
      .sort()
      .map((f) => {
        const [, type, command, ifName] = f.replace(/\.json$/, '').split('-');
        const base = join(dir, f.replace(/\.json$/, ''));
        return { type: type ?? '', command: command ?? '', ifName: ifName ?? '', netns: readFileSync(`${base}.netns`, 'utf8'), conf: JSON.parse(readFileSync(`${base}.json`, 'utf8')) as Record<string, unknown> };
      });
  };
  const fail = (type: string, command: string, stdout: string) => writeFileSync(join(root, `fail-${type}-${command}`), stdout);
  return { root, confDir, cacheDir, plugin, calls, fail, logs, clearCalls: () => rmSync(join(root, 'calls', '.'), { recursive: true }) };
}

const LIST = {
  cniVersion: '1.0.0',
  name: 'fakenet',
  plugins: [
    { type: 'bridge', bridge: 'x', capabilities: { ipRanges: false } },
    { type: 'portmap', capabilities: { portMappings: true } },
  ],
};
const pod = (sandboxId: string) => ({ sandboxId, podNamespace: 'ns', podName: 'p', podUID: 'u', netnsPath: '/proc/self/ns/net', portMappings: [{ hostPort: 81, containerPort: 80, protocol: 'tcp' as const }] });

/** A sandbox's plugin calls split by network: loopback's, and the default list's in their order. */
type Fixture = ReturnType<typeof fixture>;
const byNetwork = (calls: ReturnType<Fixture['calls']>) => ({ lo: calls.filter((c) => c.type === 'loopback'), list: calls.filter((c) => c.type !== 'loopback') });
const line = (c: ReturnType<Fixture['calls']>[number]) => `${c.command} ${c.type} ${c.ifName}`;

t.test('ADD: loopback beside the list, the list in order, each plugin given the previous result', async (t) => {
  const f = fixture(t, LIST);
  await f.plugin.start();
  const st = await f.plugin.setUpPod(pod('s1'));
  const { lo, list } = byNetwork(f.calls());
  t.same(lo.map(line), ['ADD loopback lo']);
  t.same(list.map(line), ['ADD bridge eth0', 'ADD portmap eth0'], 'the list in order');
  t.same(lo[0]?.conf, { type: 'loopback', name: 'cni-loopback', cniVersion: '0.2.0' });
  t.same(list[0]?.conf, { type: 'bridge', bridge: 'x', name: 'fakenet', cniVersion: '1.0.0' }, 'first plugin: no prevResult, no runtimeConfig, no capabilities');
  const portmap = list[1]?.conf ?? {};
  t.equal((portmap.prevResult as { by?: string }).by, 'bridge', "portmap gets bridge's result");
  t.same(portmap.runtimeConfig, { portMappings: [{ hostPort: 81, containerPort: 80, protocol: 'tcp' }] });
  t.notOk('capabilities' in portmap);
  t.same(st, { ips: ['10.9.0.2'] }, "the last plugin's result; the host-side address is left out");
  t.same(f.plugin.podNetworkStatus('s1'), st);
});

t.test('a failed loopback ADD fails the set-up once the list has settled too; nothing is cached', async (t) => {
  const f = fixture(t, LIST);
  await f.plugin.start();
  f.fail('loopback', 'ADD', '{"code":11,"msg":"lo broke"}');
  await t.rejects(f.plugin.setUpPod(pod('s1')), /lo broke/);
  t.same(byNetwork(f.calls()).list.map(line), ['ADD bridge eth0', 'ADD portmap eth0'], 'the list ran to its end before the failure was thrown');
  t.equal(f.plugin.podNetworkStatus('s1'), undefined);
  t.notOk(existsSync(join(f.cacheDir, 'results', 'fakenet-s1-eth0')));
});

t.test('DEL: reverse order with the cached result as prevResult, loopback beside it; the cache goes', async (t) => {
  const f = fixture(t, LIST);
  await f.plugin.start();
  await f.plugin.setUpPod(pod('s1'));
  const cache = join(f.cacheDir, 'results', 'fakenet-s1-eth0');
  t.ok(existsSync(cache));
  const before = f.calls().length;
  await f.plugin.tearDownPod({ ...pod('s1'), netnsPath: join(f.root, 'gone-netns') });
  const dels = f.calls().slice(before);
  const { lo, list } = byNetwork(dels);
  t.same(list.map(line), ['DEL portmap eth0', 'DEL bridge eth0']);
  t.same(lo.map(line), ['DEL loopback lo']);
  for (const c of list) t.equal((c.conf.prevResult as { by?: string }).by, 'portmap', `${c.type}: prevResult is the final ADD result`);
  t.notOk('prevResult' in (lo[0]?.conf ?? {}), 'loopback (0.2.0) gets no prevResult');
  t.same(dels.map((c) => c.netns), ['', '', ''], 'a netns that is gone: CNI_NETNS is empty');
  t.same(list[0]?.conf.runtimeConfig, { portMappings: [{ hostPort: 81, containerPort: 80, protocol: 'tcp' }] }, 'DEL gets the cached capability args');
  t.notOk(existsSync(cache));
  t.equal(f.plugin.podNetworkStatus('s1'), undefined);
});

t.test('DEL uses the cached config when the conf dir changed; before 0.4.0 no prevResult', async (t) => {
  const f = fixture(t, { ...LIST, cniVersion: '0.3.1' });
  await f.plugin.start();
  await f.plugin.setUpPod(pod('s1'));
  writeFileSync(join(f.confDir, '10-net.conflist'), JSON.stringify({ cniVersion: '1.0.0', name: 'newnet', plugins: [{ type: 'bridge' }] }));
  await f.plugin.reload();
  t.ok(f.logs.some((l) => l.includes('default network chosen') && l.includes('newnet')), 'the change is logged');
  const before = f.calls().length;
  await f.plugin.tearDownPod(pod('s1'));
  const dels = f.calls().slice(before);
  const { lo, list } = byNetwork(dels);
  t.same([...list, ...lo].map((c) => `${c.type}:${String(c.conf.name)}:${String(c.conf.cniVersion)}`), ['portmap:fakenet:0.3.1', 'bridge:fakenet:0.3.1', 'loopback:cni-loopback:0.2.0']);
  t.notOk(dels.some((c) => 'prevResult' in c.conf));
  t.same(dels.map((c) => c.netns), ['/proc/self/ns/net', '/proc/self/ns/net', '/proc/self/ns/net'], 'an existing netns is passed');
});

t.test('DEL errors: "no such file or directory" counts as done; others reject and keep the cache; loopback errors are only logged', async (t) => {
  const f = fixture(t, LIST);
  await f.plugin.start();
  await f.plugin.setUpPod(pod('s1'));
  await f.plugin.setUpPod(pod('s2'));
  f.fail('loopback', 'DEL', '{"code":11,"msg":"loopback DEL broke"}');
  f.fail('bridge', 'DEL', '{"code":11,"msg":"failed to open netns: no such file or directory"}');
  await f.plugin.tearDownPod(pod('s1'));
  t.equal(f.plugin.podNetworkStatus('s1'), undefined, 'no such file: torn down');
  t.ok(f.logs.some((l) => l.includes('loopback DEL failed') && l.includes('loopback DEL broke')), 'the loopback failure is logged');
  f.fail('bridge', 'DEL', '{"code":11,"msg":"device busy"}');
  await t.rejects(f.plugin.tearDownPod(pod('s2')), { message: 'plugin type="bridge" failed (del): device busy' });
  t.same(f.plugin.podNetworkStatus('s2'), { ips: ['10.9.0.4'] }, 'still cached after a failed DEL');
  t.ok(existsSync(join(f.cacheDir, 'results', 'fakenet-s2-eth0')));
});

t.test('a DEL of a sandbox never set up, with no config at all, resolves', async (t) => {
  const f = fixture(t, LIST);
  rmSync(join(f.confDir, '10-net.conflist'));
  await f.plugin.start();
  await f.plugin.tearDownPod(pod('never'));
  t.same(f.calls().map((c) => `${c.command} ${c.type}`), ['DEL loopback']);
  await t.rejects(f.plugin.setUpPod(pod('../x')), /invalid sandbox ID/);
  await t.rejects(f.plugin.tearDownPod(pod('')), /invalid sandbox ID/);
});

t.test('operations of one sandbox are serialised', async (t) => {
  const f = fixture(t, LIST);
  await f.plugin.start();
  const ops = [f.plugin.setUpPod(pod('s1')), f.plugin.tearDownPod(pod('s1')), f.plugin.setUpPod(pod('s1'))];
  await Promise.all(ops);
  // Each operation's three calls before the next one's (loopback's place among them may vary).
  const calls = f.calls().map((c) => `${c.command} ${c.type}`);
  t.same([0, 3, 6].map((i) => calls.slice(i, i + 3).sort()), [
    ['ADD bridge', 'ADD loopback', 'ADD portmap'],
    ['DEL bridge', 'DEL loopback', 'DEL portmap'],
    ['ADD bridge', 'ADD loopback', 'ADD portmap'],
  ]);
  t.same(calls.filter((c) => !c.endsWith('loopback')), ['ADD bridge', 'ADD portmap', 'DEL portmap', 'DEL bridge', 'ADD bridge', 'ADD portmap'], 'each list in its order');
});

t.test('garbage collection with fake plugins: DEL without netns for dead sandboxes, in-flight ones kept', async (t) => {
  const f = fixture(t, LIST);
  await f.plugin.start();
  await f.plugin.setUpPod(pod('dead'));
  await f.plugin.setUpPod(pod('live'));
  const before = f.calls().length;
  t.same(await f.plugin.garbageCollect(new Set(['live'])), ['dead']);
  const dels = f.calls().slice(before);
  t.same(dels.map((c) => `${c.command} ${c.type} ${c.netns}`), ['DEL portmap ', 'DEL bridge ']);
  t.same(f.plugin.podNetworkStatus('live'), { ips: [f.plugin.podNetworkStatus('live')?.ips[0] ?? 'x'] });
  t.equal(f.plugin.podNetworkStatus('dead'), undefined);
});

t.test('KeyedMutex: one key in order, different keys in parallel', async (t) => {
  const m = new KeyedMutex();
  const order: string[] = [];
  let releaseA: () => void = () => undefined;
  const a1 = m.run('a', () => new Promise<void>((r) => (releaseA = r)).then(() => void order.push('a1')));
  const a2 = m.run('a', async () => void order.push('a2'));
  await m.run('b', async () => void order.push('b'));
  t.same(order, ['b'], 'b ran while a1 was pending');
  await new Promise((r) => setImmediate(r));
  t.equal(m.size, 1, 'only a is busy');
  releaseA();
  await Promise.all([a1, a2]);
  t.same(order, ['b', 'a1', 'a2']);
  await t.rejects(m.run('c', () => Promise.reject(new Error('x'))), /x/);
  t.equal(await m.run('c', async () => 5), 5, 'a failure does not block the key');
  await new Promise((r) => setImmediate(r));
  t.equal(m.size, 0, 'idle keys are dropped');
});
