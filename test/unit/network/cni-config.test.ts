import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t, { type Test } from 'tap';
import { ConfError, LOOPBACK_NETWORK, findPlugin, loadDefaultNetwork, parseConf, parseConfList } from '../../../src/network/cni/config.js';

function tempDirs(t: Test) {
  const root = mkdtempSync(join(tmpdir(), 'nodelet-cni-conf-'));
  t.teardown(() => rmSync(root, { recursive: true, force: true }));
  const conf = join(root, 'net.d');
  const bin1 = join(root, 'bin1');
  const bin2 = join(root, 'bin2');
  for (const d of [conf, bin1, bin2]) mkdirSync(d);
  const plugin = (dir: string, name: string, exec = true) => {
    writeFileSync(join(dir, name), '#!/bin/sh\nexit 0\n');
    chmodSync(join(dir, name), exec ? 0o755 : 0o644);
  };
  return { root, conf, bin1, bin2, plugin };
}

const list = (name: string, ...types: string[]) => JSON.stringify({ cniVersion: '1.0.0', name, plugins: types.map((type) => ({ type })) });

t.test('a .conflist parses; capabilities set to true are collected', async (t) => {
  const net = parseConfList(JSON.stringify({ cniVersion: '0.4.0', name: 'k8s', plugins: [{ type: 'bridge', ipam: { type: 'host-local' } }, { type: 'portmap', capabilities: { portMappings: true, ipRanges: false } }] }));
  t.equal(net.name, 'k8s');
  t.equal(net.cniVersion, '0.4.0');
  t.same(net.plugins.map((p) => p.type), ['bridge', 'portmap']);
  t.same(net.plugins.map((p) => p.capabilities), [[], ['portMappings']]);
});

t.test('a .conf is wrapped into a list of one plugin, whose bytes are the list', async (t) => {
  const net = parseConf(JSON.stringify({ cniVersion: '0.3.1', name: 'single', type: 'bridge', capabilities: { ipRanges: true } }));
  t.same(net.plugins.map((p) => p.type), ['bridge']);
  t.same(net.plugins[0]?.capabilities, ['ipRanges']);
  const again = parseConfList(net.bytes);
  t.equal(again.name, 'single');
  t.equal(again.plugins[0]?.type, 'bridge');
});

t.test('invalid configs are refused with a reason', async (t) => {
  const cases: [string, RegExp][] = [
    ['not json', /invalid JSON/],
    ['[]', /not a JSON object/],
    ['null', /not a JSON object/],
    ['{"cniVersion":"1.0.0","plugins":[{"type":"x"}]}', /missing "name"/],
    ['{"cniVersion":"1.0.0","name":"../etc","plugins":[{"type":"x"}]}', /invalid network name/],
    ['{"name":"n","plugins":[{"type":"x"}]}', /invalid "cniVersion"/],
    ['{"cniVersion":1,"name":"n","plugins":[{"type":"x"}]}', /invalid "cniVersion"/],
    ['{"cniVersion":"1.0.0","name":"n"}', /no "plugins"/],
    ['{"cniVersion":"1.0.0","name":"n","plugins":[]}', /no "plugins"/],
    ['{"cniVersion":"1.0.0","name":"n","plugins":[{}]}', /missing "type"/],
    ['{"cniVersion":"1.0.0","name":"n","plugins":[7]}', /not an object/],
    ['{"cniVersion":"1.0.0","name":"n","plugins":[{"type":"../../bin/sh"}]}', /invalid "type"/],
    ['{"cniVersion":"1.0.0","name":"n","plugins":[{"type":"x","capabilities":[1]}]}', /"capabilities" is not an object/],
  ];
  for (const [text, re] of cases) t.throws(() => parseConfList(text), re, text);
  t.throws(() => parseConf('{"cniVersion":"1.0.0","name":"n"}'), ConfError);
});

t.test('the built-in loopback list is cri-dockerd getLoNetwork', async (t) => {
  t.same(JSON.parse(LOOPBACK_NETWORK.bytes.toString()), { cniVersion: '0.2.0', name: 'cni-loopback', plugins: [{ type: 'loopback' }] });
});

t.test('findPlugin: the first bin dir with an executable file of that name', async (t) => {
  const d = tempDirs(t);
  d.plugin(d.bin1, 'noexec', false);
  d.plugin(d.bin2, 'noexec');
  d.plugin(d.bin2, 'bridge');
  mkdirSync(join(d.bin1, 'adir'));
  t.equal(await findPlugin('bridge', [d.bin1, d.bin2]), join(d.bin2, 'bridge'));
  t.equal(await findPlugin('noexec', [d.bin1, d.bin2]), join(d.bin2, 'noexec'), 'a non-executable file is passed over');
  t.equal(await findPlugin('adir', [d.bin1]), undefined, 'a directory is no plugin');
  t.equal(await findPlugin('missing', [d.bin1, d.bin2]), undefined);
  t.equal(await findPlugin('../bin2/bridge', [d.bin1]), undefined, 'types are names, not paths');
});

t.test('loadDefaultNetwork: sorted by name; the first valid file whose plugins all exist wins', async (t) => {
  const d = tempDirs(t);
  d.plugin(d.bin1, 'bridge');
  d.plugin(d.bin2, 'portmap');
  t.same((await loadDefaultNetwork(join(d.root, 'absent'), [d.bin1])).network, undefined, 'a missing conf dir is no network');
  t.equal((await loadDefaultNetwork(d.conf, [d.bin1])).network, undefined, 'an empty conf dir is no network');
  writeFileSync(join(d.conf, '05-broken.conflist'), '{');
  writeFileSync(join(d.conf, '10-missing.conflist'), list('missing', 'bridge', 'nosuch'));
  writeFileSync(join(d.conf, '20-good.conflist'), list('good', 'bridge', 'portmap'));
  writeFileSync(join(d.conf, '30-later.conf'), JSON.stringify({ cniVersion: '1.0.0', name: 'later', type: 'bridge' }));
  writeFileSync(join(d.conf, '00-ignored.txt'), list('txt', 'bridge'));
  const r = await loadDefaultNetwork(d.conf, [d.bin1, d.bin2]);
  t.equal(r.network?.name, 'good');
  t.equal(r.network?.file, join(d.conf, '20-good.conflist'));
  t.equal(r.skipped.length, 2);
  t.match(r.skipped[0], /05-broken.conflist: invalid JSON/);
  t.match(r.skipped[1], /10-missing.conflist: plugin type "nosuch" not found/);
  rmSync(join(d.conf, '20-good.conflist'));
  const r2 = await loadDefaultNetwork(d.conf, [d.bin1, d.bin2]);
  t.equal(r2.network?.name, 'later', 'a .conf is loaded too');
  writeFileSync(join(d.conf, '01-json.json'), JSON.stringify({ cniVersion: '1.0.0', name: 'viajson', type: 'portmap' }));
  t.equal((await loadDefaultNetwork(d.conf, [d.bin1, d.bin2])).network?.name, 'viajson', '.json files are single-plugin configs');
});
