import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import t, { type Test } from 'tap';
import { ConfigError } from '../../../src/config/errors.js';
import { loadConfigFile } from '../../../src/config/file.js';

const HEAD = 'apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n';

function write(t: Test, body: string): string {
  const dir = t.testdir();
  const path = join(dir, 'kubelet.yaml');
  writeFileSync(path, body);
  return path;
}

function rejects(t: Test, path: string, pattern: RegExp): void {
  const err = t.throws(() => loadConfigFile(path));
  t.ok(err instanceof ConfigError, 'ConfigError');
  if (!(err instanceof ConfigError)) return;
  t.equal(err.exitCode, 2);
  t.match(err.message, pattern);
  t.match(err.message, path, 'names the file');
  t.notMatch(err.message, /\n/, 'one line');
}

t.test('maps the supported KubeletConfiguration fields', async (t) => {
  const path = write(
    t,
    HEAD +
      'address: 127.0.0.2\nport: 10260\nstaticPodPath: /etc/kubernetes/manifests\nfileCheckFrequency: 5s\n' +
      'syncFrequency: 2m\nlogging:\n  format: json\n  verbosity: 4\n',
  );
  const { values, warnings } = loadConfigFile(path);
  t.same(values, {
    address: '127.0.0.2', port: 10260, staticPodPath: '/etc/kubernetes/manifests', fileCheckFrequencyMs: 5000,
    syncFrequencyMs: 120_000, loggingFormat: 'json', verbosity: 4,
  });
  t.same(warnings, []);
});

t.test('absent and null fields are left unset', async (t) => {
  t.same(loadConfigFile(write(t, HEAD)).values, {});
  t.same(loadConfigFile(write(t, HEAD + 'port: null\nlogging:\n')).values, {});
});

t.test('unknown or unsupported fields are warnings, not failures', async (t) => {
  const path = write(
    t,
    HEAD +
      'port: 10251\nreadOnlyPort: 0\ncpuManagerPolicy: static\nauthentication:\n  anonymous:\n    enabled: false\n  webhook:\n    cacheTTL: 2m\nserializeImagePulls: false\nlogging:\n  format: text\n  flushFrequency: 5s\n',
  );
  const { values, warnings } = loadConfigFile(path);
  t.same(values, { port: 10251, readOnlyPort: 0, anonymousAuth: false, authenticationTokenWebhookCacheTTLMs: 120_000, loggingFormat: 'text' });
  t.equal(warnings.length, 3);
  t.match(warnings[0], /ignoring field "cpuManagerPolicy"/);
  t.match(warnings[1], /ignoring field "serializeImagePulls"/);
  t.match(warnings[2], /ignoring field "logging.flushFrequency"/);
  for (const w of warnings) t.match(w, path);
});

t.test('relative staticPodPath resolves against the file directory, like the kubelet', async (t) => {
  const path = write(t, HEAD + 'staticPodPath: manifests\n');
  t.equal(loadConfigFile(path).values.staticPodPath, join(path, '..', 'manifests'));
});

t.test('apiVersion and kind are checked', async (t) => {
  rejects(t, write(t, 'kind: KubeletConfiguration\n'), /apiVersion is missing; expected "kubelet\.config\.k8s\.io\/v1beta1"/);
  rejects(t, write(t, 'apiVersion: kubelet.config.k8s.io/v1\nkind: KubeletConfiguration\n'), /unsupported apiVersion "kubelet\.config\.k8s\.io\/v1"/);
  rejects(t, write(t, 'apiVersion: kubelet.config.k8s.io/v1beta1\n'), /kind is missing; expected "KubeletConfiguration"/);
  rejects(t, write(t, 'apiVersion: kubelet.config.k8s.io/v1beta1\nkind: Pod\n'), /unsupported kind "Pod"/);
});

t.test('unreadable, malformed or non-mapping files fail naming the file', async (t) => {
  const dir = t.testdir();
  rejects(t, join(dir, 'missing.yaml'), /failed to load kubelet config file .*ENOENT/);
  const asDir = join(dir, 'adir');
  mkdirSync(asDir);
  rejects(t, asDir, /EISDIR/);
  rejects(t, write(t, HEAD + 'port: [1\n'), /YAML: /);
  rejects(t, write(t, HEAD + 'port: 1\nport: 2\n'), /YAML: Map keys must be unique/);
  rejects(t, write(t, '- a\n- b\n'), /expected a KubeletConfiguration mapping/);
  rejects(t, write(t, ''), /expected a KubeletConfiguration mapping/);
});

t.test('wrong value types and ranges fail', async (t) => {
  rejects(t, write(t, HEAD + 'port: "10250"\n'), /invalid value for port: expected an integer, got string "10250"/);
  rejects(t, write(t, HEAD + 'port: 70000\n'), /invalid value for port: must be between 1 and 65535, inclusive/);
  rejects(t, write(t, HEAD + 'syncFrequency: 60\n'), /invalid value for syncFrequency: expected a duration string/);
  rejects(t, write(t, HEAD + 'syncFrequency: 1x\n'), /invalid value for syncFrequency: time: unknown unit "x"/);
  rejects(t, write(t, HEAD + 'fileCheckFrequency: -1s\n'), /invalid value for fileCheckFrequency: must not be negative/);
  rejects(t, write(t, HEAD + 'address: 1\n'), /invalid value for address: expected a string/);
  rejects(t, write(t, HEAD + 'logging:\n  format: xml\n'), /invalid value for logging\.format: supported values: "text", "json"/);
  rejects(t, write(t, HEAD + 'logging:\n  verbosity: -1\n'), /invalid value for logging\.verbosity: must not be negative/);
  rejects(t, write(t, HEAD + 'logging: json\n'), /invalid value for logging: expected a mapping/);
});
