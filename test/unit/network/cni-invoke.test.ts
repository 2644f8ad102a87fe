import { chmodSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t, { type Test } from 'tap';
import { type CacheEntry, cacheFilePath, listCacheEntries, parseCacheEntry, readCacheEntry, serializeCacheEntry, writeCacheEntry } from '../../../src/network/cni/cache.js';
import { parseConfList } from '../../../src/network/cni/config.js';
import { MAX_PLUGIN_OUTPUT_BYTES, execPlugin, formatCNIArgs, pluginFailure } from '../../../src/network/cni/exec.js';
import { buildOneConfig } from '../../../src/network/cni/invoke.js';
import { capabilityArgsFor, cniArgsFor, ipRangesFor } from '../../../src/network/cni/plugin.js';

const pod = { sandboxId: 'abc123', podNamespace: 'default', podName: 'web', podUID: 'uid-1' };

t.test('CNI_ARGS of a pod', async (t) => {
  t.equal(formatCNIArgs(cniArgsFor(pod)), 'IgnoreUnknown=1;K8S_POD_NAMESPACE=default;K8S_POD_NAME=web;K8S_POD_INFRA_CONTAINER_ID=abc123;K8S_POD_UID=uid-1');
});

t.test('capability args: portMappings always, ipRanges per CIDR, bandwidth when given', async (t) => {
  t.same(ipRangesFor(['10.244.7.0/24']), [[{ subnet: '10.244.7.0/24' }]]);
  t.same(ipRangesFor(['10.244.7.0/24', 'fd00:7::/64']), [[{ subnet: '10.244.7.0/24' }], [{ subnet: 'fd00:7::/64' }]]);
  const pm = { hostPort: 8080, containerPort: 80, protocol: 'tcp' as const };
  t.same(capabilityArgsFor({ ...pod, netnsPath: '/x', portMappings: [pm] }, []), { portMappings: [pm] });
  t.same(capabilityArgsFor({ ...pod, netnsPath: '/x', portMappings: [], bandwidth: { ingressRate: 1000 } }, ['10.0.0.0/24']), {
    portMappings: [],
    ipRanges: [[{ subnet: '10.0.0.0/24' }]],
    bandwidth: { ingressRate: 1000 },
  });
});

t.test('buildOneConfig: name, cniVersion, prevResult, runtimeConfig of declared capabilities only, no capabilities key', async (t) => {
  const list = parseConfList(
    JSON.stringify({
      cniVersion: '1.0.0',
      name: 'k8s',
      plugins: [
        { type: 'bridge', name: 'ignored', cniVersion: '0.1.0', prevResult: { stale: true }, ipam: { type: 'host-local' }, capabilities: { ipRanges: true } },
        { type: 'portmap', capabilities: { portMappings: true, bandwidth: false }, runtimeConfig: { stale: 1 } },
        { type: 'tuning' },
      ],
    }),
  );
  const [bridge, portmap, tuning] = list.plugins;
  if (!bridge || !portmap || !tuning) throw new Error('three plugins');
  const rt = { containerId: 'c', netns: '/n', ifName: 'eth0', args: [], capabilityArgs: { portMappings: [{ hostPort: 1, containerPort: 2, protocol: 'tcp' }], bandwidth: { ingressRate: 1 } } };
  t.same(buildOneConfig(list, bridge, rt, undefined), { type: 'bridge', name: 'k8s', cniVersion: '1.0.0', ipam: { type: 'host-local' } }, 'ipRanges declared but not supplied: no runtimeConfig; stale prevResult dropped');
  const prev = { cniVersion: '1.0.0', ips: [] };
  t.same(buildOneConfig(list, portmap, rt, prev), {
    type: 'portmap',
    name: 'k8s',
    cniVersion: '1.0.0',
    prevResult: prev,
    runtimeConfig: { portMappings: [{ hostPort: 1, containerPort: 2, protocol: 'tcp' }] },
  });
  t.same(buildOneConfig(list, tuning, { ...rt, capabilityArgs: { ...rt.capabilityArgs, ipRanges: [[{ subnet: '10.0.0.0/8' }]] } }, prev), { type: 'tuning', name: 'k8s', cniVersion: '1.0.0', prevResult: prev });
  t.same(buildOneConfig(list, bridge, { ...rt, capabilityArgs: { ipRanges: [[{ subnet: '10.0.0.0/8' }]] } }, undefined).runtimeConfig, { ipRanges: [[{ subnet: '10.0.0.0/8' }]] });
});

t.test('error messages after libcni', async (t) => {
  t.equal(pluginFailure('bridge', 'ADD', '{"code":1,"msg":"incompatible CNI versions","details":"config is \\"1.1.0\\""}', '', 'exit status 1').message, 'plugin type="bridge" failed (add): incompatible CNI versions; config is "1.1.0"');
  const e = pluginFailure('x', 'DEL', '{"cniVersion":"1.0.0","code":7,"msg":"boom"}', 'noise', 'exit status 1');
  t.equal(e.message, 'plugin type="x" failed (del): boom');
  t.equal(e.code, 7);
  t.equal(pluginFailure('x', 'ADD', '', 'segfault here\n', 'exit status 139').message, 'plugin type="x" failed (add): netplugin failed: "segfault here"');
  t.equal(pluginFailure('x', 'ADD', '', '', 'killed by SIGKILL').message, 'plugin type="x" failed (add): netplugin failed: "killed by SIGKILL"');
  t.match(pluginFailure('x', 'ADD', 'not json', '', 'exit status 1').message, /^plugin type="x" failed \(add\): netplugin failed but error parsing its diagnostic message "not json": /);
  t.match(pluginFailure('x', 'ADD', '[1]', '', 'exit status 1').message, /not an object/);
  t.equal(pluginFailure('x', 'ADD', '{"code":"z"}', 'why', 'exit status 2').message, 'plugin type="x" failed (add): exit status 2: why', 'no msg: the exit and stderr');
});

function scriptDir(t: Test) {
  const dir = mkdtempSync(join(tmpdir(), 'nodelet-cni-exec-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const script = (name: string, body: string) => {
    const p = join(dir, name);
    writeFileSync(p, `#!/bin/sh\n${body}\n`);
    chmodSync(p, 0o755);
    return p;
  };
  return { dir, script };
}

const req = (path: string, over: Partial<Parameters<typeof execPlugin>[0]> = {}) => ({
  path,
  type: 'fake',
  command: 'ADD' as const,
  containerId: 'cid',
  netns: '/run/netns/x',
  ifName: 'eth0',
  args: 'A=1;B=2',
  cniPath: '/a:/b',
  stdin: Buffer.from('{"hello":"world"}'),
  deadline: performance.now() + 10_000,
  ...over,
});

t.test('execPlugin: config on stdin, CNI_* environment, result from stdout', async (t) => {
  const { script } = scriptDir(t);
  const p = script('env', 'in=$(cat); printf \'{"in":%s,"env":"%s|%s|%s|%s|%s|%s"}\' "$in" "$CNI_COMMAND" "$CNI_CONTAINERID" "$CNI_NETNS" "$CNI_IFNAME" "$CNI_ARGS" "$CNI_PATH"');
  t.same(await execPlugin(req(p)), { in: { hello: 'world' }, env: 'ADD|cid|/run/netns/x|eth0|A=1;B=2|/a:/b' });
  t.equal(await execPlugin(req(script("quiet", "cat >/dev/null"), { command: "DEL" })), undefined, 'empty stdout on success: no result');
});

t.test('execPlugin: failures', async (t) => {
  const { script } = scriptDir(t);
  await t.rejects(execPlugin(req(script('fail', 'echo \'{"code":7,"msg":"boom from test"}\'; exit 1'))), { message: 'plugin type="fake" failed (add): boom from test', code: 7 });
  await t.rejects(execPlugin(req(script('stderr', 'echo oops >&2; exit 3'))), { message: 'plugin type="fake" failed (add): netplugin failed: "oops"' });
  await t.rejects(execPlugin(req(script('garbage', 'echo "{{"'))), /invalid result JSON/);
  await t.rejects(execPlugin(req(script('hang', 'exec sleep 30'), { deadline: performance.now() + 200 })), /timed out after/);
  await t.rejects(execPlugin(req(script('flood', `head -c ${MAX_PLUGIN_OUTPUT_BYTES + 10} /dev/zero`))), /stdout over 1048576 bytes/);
  await t.rejects(execPlugin(req('/nonexistent/plugin')), /failed \(add\): .*ENOENT/);
  await t.rejects(execPlugin(req(script('x', 'true'), { deadline: performance.now() - 1 })), /timed out/);
});

const entry: CacheEntry = {
  containerId: 'abc123',
  config: Buffer.from('{"cniVersion":"1.0.0","name":"k8s","plugins":[{"type":"bridge"}]}'),
  ifName: 'eth0',
  networkName: 'k8s',
  netns: '/run/netns/p',
  cniArgs: [['IgnoreUnknown', '1'], ['K8S_POD_NAME', 'web']],
  capabilityArgs: { portMappings: [] },
  result: { cniVersion: '1.0.0', ips: [{ address: '10.0.0.2/24' }] },
};

t.test('cache: libcni format, path, modes, round trip', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'nodelet-cni-cache-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const path = await writeCacheEntry(dir, entry);
  t.equal(path, join(dir, 'results', 'k8s-abc123-eth0'));
  t.equal(path, cacheFilePath(dir, 'k8s', 'abc123', 'eth0'));
  t.equal(statSync(path).mode & 0o777, 0o600);
  t.equal(statSync(join(dir, 'results')).mode & 0o777, 0o700);
  const raw = JSON.parse(readFileSync(path, 'utf8')) as Record<string, unknown>;
  t.same(raw, {
    kind: 'cniCacheV1',
    containerId: 'abc123',
    config: entry.config.toString('base64'),
    ifName: 'eth0',
    networkName: 'k8s',
    netns: '/run/netns/p',
    cniArgs: [['IgnoreUnknown', '1'], ['K8S_POD_NAME', 'web']],
    capabilityArgs: { portMappings: [] },
    result: entry.result,
  });
  const back = await readCacheEntry(path);
  t.same({ ...back, config: back.config.toString() }, { ...entry, config: entry.config.toString() });
  t.notOk(JSON.parse(serializeCacheEntry({ ...entry, netns: '', cniArgs: [], capabilityArgs: {} })).netns, 'empty fields are omitted, as omitempty');
  writeFileSync(join(dir, 'results', 'junk'), 'nope');
  writeFileSync(join(dir, 'results', 'big'), Buffer.alloc(5 * 1024 * 1024, 0x20));
  const { entries, errors } = await listCacheEntries(dir);
  t.same(entries.map((e) => e.entry.containerId), ['abc123']);
  t.equal(errors.length, 2);
  t.match(errors.join('\n'), /big: larger than/);
});

t.test('cache: malformed entries are refused', async (t) => {
  const good = JSON.parse(serializeCacheEntry(entry)) as Record<string, unknown>;
  const bad: [unknown, RegExp][] = [
    [[], /not an object/],
    [{ ...good, kind: 'other' }, /kind/],
    [{ ...good, containerId: 1 }, /"containerId" is not a string/],
    [{ ...good, cniArgs: [['a']] }, /non-pair/],
    [{ ...good, cniArgs: {} }, /not a list/],
    [{ ...good, capabilityArgs: [] }, /"capabilityArgs" is not an object/],
    [{ ...good, result: undefined }, /no result/],
  ];
  for (const [v, re] of bad) t.throws(() => parseCacheEntry(JSON.stringify(v)), re);
  t.throws(() => parseCacheEntry('{'), SyntaxError);
});
