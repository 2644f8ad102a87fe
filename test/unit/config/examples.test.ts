import { execFile, execFileSync } from 'node:child_process';
import { chmodSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { buildConfig, type Config, type HostInfo } from '../../../src/config/index.js';
import { loadConfigFile } from '../../../src/config/file.js';
import { parseFlags } from '../../../src/config/parse.js';

/**
 * The shipped examples (package.json `files` includes examples/) go through the real loaders:
 * examples/kubelet-config.yaml through `--config`, examples/nodelet.service's ExecStart through
 * the flag parser, and the unit through `systemd-analyze verify` where the machine has it.
 */
const examples = new URL('../../../examples/', import.meta.url).pathname;
const configFile = join(examples, 'kubelet-config.yaml');
const unitFile = join(examples, 'nodelet.service');
const HOST: HostInfo = { hostname: 'node-1', interfaces: { eth0: [{ address: '192.168.1.20', family: 'IPv4', internal: false }] } };

function build(argv: string[]): { config: Config; warnings: string[] } {
  const r = buildConfig(argv, {}, HOST);
  if ('help' in r) throw new Error('unexpected help');
  return r;
}

/** `Key=value` lines of one section of a unit file, continuation lines joined (systemd.syntax(7)). */
function section(text: string, name: string): Map<string, string[]> {
  const out = new Map<string, string[]>();
  let current = '';
  const lines = text.replace(/\\\n/g, ' ').split('\n');
  for (const raw of lines) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#') || line.startsWith(';')) continue;
    const header = /^\[(.+)\]$/.exec(line);
    if (header) {
      current = header[1] ?? '';
      continue;
    }
    if (current !== name) continue;
    const i = line.indexOf('=');
    const key = line.slice(0, i).trim();
    out.set(key, [...(out.get(key) ?? []), line.slice(i + 1).trim()]);
  }
  return out;
}

/** ExecStart's words: systemd splits on whitespace and honours double and single quotes. */
function words(command: string): string[] {
  const out: string[] = [];
  for (const m of command.matchAll(/"((?:[^"\\]|\\.)*)"|'([^']*)'|(\S+)/g)) out.push(m[1] ?? m[2] ?? m[3] ?? '');
  return out;
}

t.test('examples/kubelet-config.yaml loads through --config into the expected Config', async (t) => {
  const file = loadConfigFile(configFile);
  t.same(file.warnings, [], 'every field is one nodelet supports');
  const { config, warnings } = build([`--config=${configFile}`]);
  t.same(warnings, []);
  t.match(config, {
    staticPodPath: '/etc/kubernetes/manifests',
    fileCheckFrequencyMs: 20_000,
    syncFrequencyMs: 60_000,
    address: '127.0.0.1',
    port: 10250,
    readOnlyPort: 0,
    anonymousAuth: false,
    authenticationTokenWebhook: false,
    streamingConnectionIdleTimeoutMs: 3_600_000,
    enableDebuggingHandlers: true,
    maxPods: 50,
    loggingFormat: 'json',
    verbosity: 2,
  });
  t.equal(config.insecureDev, false, 'not the development posture');
  t.equal(config.tlsCertFile, '', 'no certificate given: nodelet generates its own');
});

t.test("examples/nodelet.service: ExecStart's flags are accepted and combine with the example config", async (t) => {
  const service = section(readFileSync(unitFile, 'utf8'), 'Service');
  const unit = section(readFileSync(unitFile, 'utf8'), 'Unit');
  t.match(unit.get('After')?.join(' '), /\bdocker\.service\b/, 'starts after Docker');
  t.same(service.get('Restart'), ['always']);
  t.notOk(service.has('ProtectSystem') || service.has('PrivateTmp') || service.has('RestrictNamespaces'), 'no sandboxing that breaks tmpfs volumes or nsenter');
  const exec = service.get('ExecStart');
  t.equal(exec?.length, 1, 'one ExecStart');
  const [binary, ...argv] = words((exec?.[0] ?? '').replace(/^[-@:+!]+/, ''));
  t.match(binary, /\/nodelet$/);

  const flags = parseFlags(argv);
  t.equal(flags.configFile, '/etc/nodelet/kubelet-config.yaml', 'the config file the unit header tells to install');
  t.same(Object.keys(flags).sort(), ['configFile', 'dockerEndpoint', 'podInfraContainerImage', 'rootDir'].sort(), 'every flag is a known one');

  // The installed path stands for the example itself.
  const { config, warnings } = build(argv.map((a) => (a.startsWith('--config=') ? `--config=${configFile}` : a)));
  t.same(warnings, []);
  t.match(config, {
    rootDir: '/var/lib/nodelet',
    certDir: '/var/lib/nodelet/pki',
    dockerEndpoint: 'unix:///var/run/docker.sock',
    podInfraContainerImage: 'registry.k8s.io/pause:3.10',
    staticPodPath: '/etc/kubernetes/manifests',
    maxPods: 50,
  });
});

const hasAnalyze = (() => {
  try {
    execFileSync('systemd-analyze', ['--version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
})();

t.test('systemd-analyze verify accepts the unit', { skip: hasAnalyze ? false : 'systemd-analyze is not installed' }, async (t) => {
  // verify insists that ExecStart's binary exists: point it at a stand-in, keep everything else.
  const dir = t.testdir();
  const binary = join(dir, 'nodelet');
  writeFileSync(binary, '#!/bin/sh\nexit 0\n');
  chmodSync(binary, 0o755);
  const unit = join(dir, 'nodelet.service');
  writeFileSync(unit, readFileSync(unitFile, 'utf8').replace('ExecStart=/usr/local/bin/nodelet', `ExecStart=${binary}`));
  const result = await new Promise<{ code: number; output: string }>((resolve) =>
    execFile('systemd-analyze', ['verify', unit], { timeout: 30_000 }, (err, stdout, stderr) =>
      resolve({ code: err ? Number((err as { code?: unknown }).code ?? 1) : 0, output: stdout + stderr }),
    ),
  );
  // Without a running systemd, verify may still note units it cannot load (docker.service on a
  // machine without Docker's unit); anything about nodelet.service itself is a failure.
  const own = result.output.split('\n').filter((l) => l.includes('nodelet.service'));
  t.same(own, [], `no complaint about nodelet.service (exit ${result.code}):\n${result.output}`);
});

t.test('examples/cni/10-nodelet-bridge.conflist loads through the CNI config loader with Debian\'s plugins', async (t) => {
  const { loadDefaultNetwork } = await import('../../../src/network/cni/config.js');
  const bin = t.testdir({ bridge: '#!/bin/sh\n', 'host-local': '#!/bin/sh\n', portmap: '#!/bin/sh\n' });
  for (const p of ['bridge', 'host-local', 'portmap']) chmodSync(join(bin, p), 0o755);
  const loaded = await loadDefaultNetwork(join(examples, 'cni'), [bin]);
  t.same(loaded.skipped, []);
  t.equal(loaded.network?.name, 'nodelet');
  t.equal(loaded.network?.cniVersion, '1.0.0');
  t.same(loaded.network?.plugins.map((p) => [p.type, p.capabilities]), [['bridge', ['ipRanges']], ['portmap', ['portMappings']]]);
  t.same((await loadDefaultNetwork(join(examples, 'cni'), [t.testdir({})])).network, undefined, 'without the plugin binaries it is not chosen');
});
