import { execFileSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t, { type Test } from 'tap';
import { createLogger } from '../../src/logging/index.js';
import { CNINetworkPlugin } from '../../src/network/cni/index.js';
import { insideTestNetns } from '../helpers/netns.js';

// Real Debian plugins create bridges, veths and iptables rules in this process's namespace: the
// whole file runs inside a sealed test netns of its own.
const ns = await insideTestNetns();
t.setTimeout(600_000);
t.comment(`inside test netns ${ns.name}`);

const DEBIAN_BIN = '/usr/lib/cni';
let seq = 0;

function ipOut(...args: string[]): string {
  return execFileSync('ip', args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
}

/** A fresh "pod" netns (a namespace of its own, created from inside the test netns). */
function podNetns(t: Test): { name: string; path: string; remove: () => void } {
  const name = `nlcni-${process.pid}-${++seq}`;
  ipOut('netns', 'add', name);
  const remove = () => {
    try {
      ipOut('netns', 'del', name);
    } catch {
      /* already gone */
    }
  };
  t.teardown(remove);
  return { name, path: `/run/netns/${name}`, remove };
}

interface Env {
  readonly root: string;
  readonly confDir: string;
  readonly cacheDir: string;
  readonly dataDir: string;
  readonly logs: string[];
  plugin(binDirs?: string[]): CNINetworkPlugin;
}

function env(t: Test): Env {
  const root = mkdtempSync(join(tmpdir(), 'nodelet-cni-it-'));
  t.teardown(() => rmSync(root, { recursive: true, force: true }));
  const confDir = join(root, 'net.d');
  const cacheDir = join(root, 'cache');
  const dataDir = join(root, 'networks');
  mkdirSync(confDir);
  const logs: string[] = [];
  const log = createLogger({ verbosity: 4, format: 'json', destination: { write: (l: string) => void logs.push(l) } });
  return {
    root,
    confDir,
    cacheDir,
    dataDir,
    logs,
    plugin: (binDirs = [DEBIAN_BIN]) => {
      const p = new CNINetworkPlugin({ confDir, binDirs, cacheDir, log, timeoutMs: 60_000 });
      t.teardown(() => p.stop());
      return p;
    },
  };
}

function bridgeList(name: string, bridge: string, dataDir: string, opts: { subnet?: string; ipRangesCap?: boolean } = {}) {
  const ipam: Record<string, unknown> = { type: 'host-local', dataDir };
  if (opts.subnet) ipam.ranges = [[{ subnet: opts.subnet }]];
  return JSON.stringify({
    cniVersion: '1.0.0',
    name,
    plugins: [
      { type: 'bridge', bridge, isGateway: true, ipam, ...(opts.ipRangesCap ? { capabilities: { ipRanges: true } } : {}) },
      { type: 'portmap', capabilities: { portMappings: true } },
    ],
  });
}

const pod = (sandboxId: string, netnsPath: string) => ({ sandboxId, podNamespace: 'default', podName: `pod-${sandboxId}`, podUID: `uid-${sandboxId}`, netnsPath, portMappings: [] });

function leases(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir).filter((f) => f !== 'lock' && !f.startsWith('last_reserved_ip'));
}

function inSubnet24(ip: string, prefix: string): boolean {
  return ip.startsWith(prefix) && !ip.endsWith('.0') && !ip.endsWith('.1') && !ip.endsWith('.255');
}

t.test('readiness: not ready until a conflist is written and reloaded; then ADD, cache, restart, DEL', async (t) => {
  const e = env(t);
  const plugin = e.plugin();
  await plugin.start();
  t.same(plugin.readiness(), { ready: false, reason: 'NetworkPluginNotReady', message: 'cni config uninitialized' });
  const a = podNetns(t);
  await t.rejects(plugin.setUpPod(pod('sbA', a.path)), /not ready: cni config uninitialized/);
  const conflist = bridgeList('t1net', 'cni-t1', e.dataDir, { subnet: '10.244.1.0/24' });
  writeFileSync(join(e.confDir, '10-t1.conflist'), conflist);
  await plugin.reload();
  t.same(plugin.readiness(), { ready: true });
  t.ok(e.logs.some((l) => l.includes('default network chosen') && l.includes('t1net')), 'the change of network is logged');

  const st = await plugin.setUpPod({ ...pod('sbA', a.path), portMappings: [{ hostPort: 18080, containerPort: 80, protocol: 'tcp' }] });
  t.equal(st.ips.length, 1);
  const ipA = st.ips[0] ?? '';
  t.ok(inSubnet24(ipA, '10.244.1.'), `IP ${ipA} in 10.244.1.0/24`);
  t.match(ipOut('-n', a.name, 'addr', 'show', 'dev', 'eth0'), new RegExp(`inet ${ipA.replace(/\./g, '\\.')}/24`), 'the pod netns has the address');
  t.match(ipOut('-n', a.name, 'link', 'show', 'lo'), /UP/, 'loopback is up in the pod netns');
  const leaseDir = join(e.dataDir, 't1net');
  t.match(readFileSync(join(leaseDir, ipA), 'utf8'), /^sbA\r?\neth0/, 'host-local lease names the sandbox');

  const cacheFile = join(e.cacheDir, 'results', 't1net-sbA-eth0');
  const cached = JSON.parse(readFileSync(cacheFile, 'utf8')) as Record<string, unknown>;
  t.equal(cached.kind, 'cniCacheV1');
  t.equal(cached.containerId, 'sbA');
  t.equal(cached.ifName, 'eth0');
  t.equal(cached.networkName, 't1net');
  t.equal(cached.netns, a.path);
  t.equal(Buffer.from(String(cached.config), 'base64').toString(), conflist, 'config is the list bytes, base64');
  t.same(cached.capabilityArgs, { portMappings: [{ hostPort: 18080, containerPort: 80, protocol: 'tcp' }] });
  t.match(JSON.stringify(cached.result), ipA);
  t.same(plugin.podNetworkStatus('sbA'), { ips: [ipA] });

  const b = podNetns(t);
  const ipB = (await plugin.setUpPod(pod('sbB', b.path))).ips[0] ?? '';
  t.ok(inSubnet24(ipB, '10.244.1.'), `second IP ${ipB}`);
  t.not(ipB, ipA, 'a second netns gets a different IP');

  const restarted = e.plugin();
  await restarted.start();
  t.same(restarted.podNetworkStatus('sbA'), { ips: [ipA] }, 'a new instance re-adopts IPs from the cache');
  t.same(restarted.podNetworkStatus('sbB'), { ips: [ipB] });
  t.equal(restarted.podNetworkStatus('nosuch'), undefined);

  // The config changes after ADD: DEL still uses the cached one (its network name and dataDir).
  writeFileSync(join(e.confDir, '10-t1.conflist'), bridgeList('othernet', 'cni-t9', join(e.root, 'elsewhere'), { subnet: '10.244.9.0/24' }));
  await restarted.reload();
  t.equal(restarted.network?.name, 'othernet');
  await restarted.tearDownPod({ sandboxId: 'sbA', podNamespace: 'default', podName: 'pod-sbA', podUID: 'uid-sbA', netnsPath: a.path });
  t.notOk(existsSync(join(leaseDir, ipA)), 'DEL released the lease');
  t.notOk(existsSync(cacheFile), 'DEL removed the cache file');
  t.equal(restarted.podNetworkStatus('sbA'), undefined);
  t.throws(() => ipOut('-n', a.name, 'addr', 'show', 'dev', 'eth0'), 'eth0 is gone from the pod netns');
  await restarted.tearDownPod({ sandboxId: 'sbA', podNamespace: 'default', podName: 'pod-sbA', podUID: 'uid-sbA', netnsPath: a.path });
  t.pass('a repeated DEL resolves');

  b.remove();
  await restarted.tearDownPod({ sandboxId: 'sbB', podNamespace: 'default', podName: 'pod-sbB', podUID: 'uid-sbB', netnsPath: b.path });
  t.notOk(existsSync(join(leaseDir, ipB)), 'DEL after the pod netns is deleted releases the lease');
  t.notOk(existsSync(join(e.cacheDir, 'results', 't1net-sbB-eth0')));
  t.same(leases(leaseDir), []);
});

t.test('ipRanges: not ready without a PodCIDR; the first PodCIDR is used', async (t) => {
  const e = env(t);
  writeFileSync(join(e.confDir, '10-t2.conflist'), bridgeList('t2net', 'cni-t2', e.dataDir, { ipRangesCap: true }));
  const plugin = e.plugin();
  await plugin.start();
  t.same(plugin.readiness(), { ready: false, reason: 'NetworkPluginNotReady', message: 'cni config needs ipRanges but no PodCIDR set' });
  plugin.setPodCIDRs([]);
  t.equal(plugin.readiness().ready, false, 'an empty value is not kept');
  plugin.setPodCIDRs(['10.244.7.0/24']);
  plugin.setPodCIDRs(['10.244.8.0/24']);
  t.same(plugin.readiness(), { ready: true });
  const p = podNetns(t);
  const { ips } = await plugin.setUpPod(pod('sbR', p.path));
  t.ok(ips[0] !== undefined && inSubnet24(ips[0], '10.244.7.'), `IP ${ips[0]} from the first PodCIDR`);
  const cached = JSON.parse(readFileSync(join(e.cacheDir, 'results', 't2net-sbR-eth0'), 'utf8')) as { capabilityArgs: unknown };
  t.same(cached.capabilityArgs, { portMappings: [], ipRanges: [[{ subnet: '10.244.7.0/24' }]] });
  await plugin.tearDownPod({ ...pod('sbR', p.path) });
  t.same(leases(join(e.dataDir, 't2net')), []);
});

t.test('garbageCollect releases attachments of sandboxes that are gone, and stray leases', async (t) => {
  const e = env(t);
  writeFileSync(join(e.confDir, '10-t3.conflist'), bridgeList('t3net', 'cni-t3', e.dataDir, { subnet: '10.244.3.0/24' }));
  const plugin = e.plugin();
  await plugin.start();
  const a = podNetns(t);
  const b = podNetns(t);
  const ipA = (await plugin.setUpPod(pod('gcA', a.path))).ips[0] ?? '';
  const ipB = (await plugin.setUpPod(pod('gcB', b.path))).ips[0] ?? '';
  const leaseDir = join(e.dataDir, 't3net');
  writeFileSync(join(leaseDir, '10.244.3.200'), 'strayid\r\neth0');
  writeFileSync(join(leaseDir, '10.244.3.201'), 'gcB');
  a.remove();
  const released = await plugin.garbageCollect(new Set(['gcB']));
  t.same(released.sort(), ['gcA', 'strayid']);
  t.notOk(existsSync(join(leaseDir, ipA)), "the dead sandbox's lease is gone");
  t.notOk(existsSync(join(leaseDir, '10.244.3.200')), 'the stray lease is gone');
  t.ok(existsSync(join(leaseDir, ipB)), "the live sandbox's lease stays");
  t.ok(existsSync(join(leaseDir, '10.244.3.201')), 'a lease of a live ID (old format) stays');
  t.equal(plugin.podNetworkStatus('gcA'), undefined);
  t.same(plugin.podNetworkStatus('gcB'), { ips: [ipB] });
  t.same(await plugin.garbageCollect(new Set(['gcB'])), [], 'a second round has nothing to release');
  await plugin.tearDownPod(pod('gcB', b.path));
});

t.test('a failing plugin: setUpPod rejects with its message', async (t) => {
  const e = env(t);
  const bin = join(e.root, 'bin');
  mkdirSync(bin);
  writeFileSync(join(bin, 'boom'), '#!/bin/sh\ncat >/dev/null\necho \'{"cniVersion":"1.0.0","code":7,"msg":"boom from test"}\'\nexit 1\n');
  chmodSync(join(bin, 'boom'), 0o755);
  writeFileSync(join(e.confDir, '10-boom.conflist'), JSON.stringify({ cniVersion: '1.0.0', name: 'boomnet', plugins: [{ type: 'boom' }] }));
  const plugin = e.plugin([bin, DEBIAN_BIN]);
  await plugin.start();
  t.equal(plugin.network?.name, 'boomnet');
  const p = podNetns(t);
  await t.rejects(plugin.setUpPod(pod('sbX', p.path)), { message: 'plugin type="boom" failed (add): boom from test' });
  t.notOk(existsSync(join(e.cacheDir, 'results', 'boomnet-sbX-eth0')), 'nothing cached after a failed ADD');
  await t.rejects(plugin.tearDownPod(pod('sbX', p.path)), /boom from test/, 'its DEL fails the same way');
});

t.test('a conflist naming a missing plugin type is skipped for the next valid file', async (t) => {
  const e = env(t);
  writeFileSync(join(e.confDir, '10-missing.conflist'), JSON.stringify({ cniVersion: '1.0.0', name: 'missingnet', plugins: [{ type: 'bridge' }, { type: 'no-such-plugin' }] }));
  writeFileSync(join(e.confDir, '20-t4.conflist'), bridgeList('t4net', 'cni-t4', e.dataDir, { subnet: '10.244.4.0/24' }));
  const plugin = e.plugin();
  await plugin.start();
  t.equal(plugin.network?.name, 't4net');
  t.same(plugin.readiness(), { ready: true });
  const p = podNetns(t);
  const { ips } = await plugin.setUpPod(pod('sbM', p.path));
  t.ok(ips[0] !== undefined && inSubnet24(ips[0], '10.244.4.'));
  await plugin.tearDownPod(pod('sbM', p.path));
});

t.test('200 ADD/DEL cycles leave no lease, no cache file and no veth behind', async (t) => {
  const e = env(t);
  writeFileSync(join(e.confDir, '10-t5.conflist'), bridgeList('t5net', 'cni-t5', e.dataDir, { subnet: '10.244.5.0/24' }));
  const plugin = e.plugin();
  await plugin.start();
  const p = podNetns(t);
  const leaseDir = join(e.dataDir, 't5net');
  // Warm up once so the bridge exists, then take the baseline.
  await plugin.setUpPod(pod('warm', p.path));
  await plugin.tearDownPod(pod('warm', p.path));
  const before = { leases: leases(leaseDir), links: ipOut('-o', 'link').split('\n').length };
  t.same(before.leases, []);
  const seen = new Set<string>();
  for (let i = 0; i < 200; i++) {
    const id = `cycle${i}`;
    const { ips } = await plugin.setUpPod(pod(id, p.path));
    if (ips.length !== 1) t.fail(`cycle ${i}: ${JSON.stringify(ips)}`);
    seen.add(ips[0] ?? '');
    await plugin.tearDownPod(pod(id, p.path));
  }
  t.ok(seen.size > 1, `host-local handed out ${seen.size} different IPs`);
  t.same(leases(leaseDir), before.leases, 'no lease left');
  t.same(readdirSync(join(e.cacheDir, 'results')), [], 'no cache file left');
  t.equal(ipOut('-o', 'link').split('\n').length, before.links, 'no veth left in the test netns');
  t.same(ipOut('-n', p.name, '-o', 'link').trim().split('\n').length, 1, 'only lo in the pod netns');
});
