import t from 'tap';
import { containerLogMaxSizeBytes, logConfig } from '../../../src/runtime/docker/log-config.js';

t.test('containerLogMaxSize in bytes: binary and decimal suffixes, rounded up, at least 1Ki', async (t) => {
  t.equal(containerLogMaxSizeBytes('10Mi'), 10 * 2 ** 20);
  t.equal(containerLogMaxSizeBytes('500k'), 500_000);
  t.equal(containerLogMaxSizeBytes('1.5Ki'), 1536);
  t.equal(containerLogMaxSizeBytes('1e6'), 1_000_000);
  t.equal(containerLogMaxSizeBytes('1024.5'), 1025, 'a fraction of a byte rounds up');
  t.throws(() => containerLogMaxSizeBytes('1023'), /must be at least 1Ki/);
  t.throws(() => containerLogMaxSizeBytes('1Ei'), /too large/);
});

t.test('LogConfig: json-file with max-size and max-file on Docker; nothing on Podman or without a setting', async (t) => {
  t.same(logConfig('docker', { maxSizeBytes: 1048576, maxFiles: 3 }), { LogConfig: { Type: 'json-file', Config: { 'max-size': '1048576', 'max-file': '3' } } });
  t.same(logConfig('podman', { maxSizeBytes: 1048576, maxFiles: 3 }), {});
  t.same(logConfig('docker', undefined), {});
});
