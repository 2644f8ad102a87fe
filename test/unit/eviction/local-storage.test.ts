import t from 'tap';
import { hasLocalStorageLimit, localStorageViolation, podEphemeralStorageLimit } from '../../../src/eviction/local-storage.js';
import { Gi, Mi, pod } from './fixtures.js';

const NANO = 1_000_000_000n;

t.test('hasLocalStorageLimit: disk emptyDir sizeLimit or an ephemeral-storage limit', async (t) => {
  t.notOk(hasLocalStorageLimit(pod('plain')));
  t.ok(hasLocalStorageLimit(pod('ed', { volumes: [{ name: 'v', emptyDir: { sizeLimit: '1Gi' } }] })));
  t.notOk(hasLocalStorageLimit(pod('mem', { volumes: [{ name: 'v', emptyDir: { medium: 'Memory', sizeLimit: '1Gi' } }] })), 'tmpfs enforces its own size');
  t.notOk(hasLocalStorageLimit(pod('zero', { volumes: [{ name: 'v', emptyDir: { sizeLimit: '0' } }, { name: 'h', hostPath: { path: '/x' } }] })));
  t.ok(hasLocalStorageLimit(pod('lim', { limits: { 'ephemeral-storage': '1Gi' } })));
  t.ok(hasLocalStorageLimit(pod('init', { initContainers: [{ name: 'i', resources: { limits: { 'ephemeral-storage': '1Gi' } } }] })));
});

t.test('emptyDir over its sizeLimit', async (t) => {
  const p = pod('ed', {
    volumes: [
      { name: 'mem', emptyDir: { medium: 'Memory', sizeLimit: '1Mi' } },
      { name: 'cache', emptyDir: { sizeLimit: '100Mi' } },
      { name: 'nolimit', emptyDir: {} },
    ],
  });
  t.equal(localStorageViolation(p, { volumeBytes: new Map([['cache', 100n * Mi], ['mem', Gi], ['nolimit', Gi]]) }, false), undefined, 'at the limit is fine; memory and unlimited ones are not checked');
  t.equal(localStorageViolation(p, { volumeBytes: new Map([['cache', 100n * Mi + 1n]]) }, false), 'Usage of EmptyDir volume "cache" exceeds the limit "100Mi". ');
  t.equal(localStorageViolation(p, {}, false), undefined, 'not measured: nothing to say');
});

t.test("pod over the sum of its containers' limits", async (t) => {
  const p = pod('sum', {
    containers: [
      { name: 'a', resources: { limits: { 'ephemeral-storage': '1Gi' } } },
      { name: 'b', resources: { limits: { 'ephemeral-storage': '512Mi' } } },
      { name: 'c' },
    ],
    volumes: [{ name: 'v', emptyDir: {} }],
  });
  t.same(podEphemeralStorageLimit(p), { nano: 1536n * Mi * NANO, text: '1536Mi' });
  // Each container under its own limit, the pod over the total with its volume.
  const usage = { containerBytes: new Map([['a', Gi - 1n], ['b', 100n * Mi], ['c', 10n * Mi]]), volumeBytes: new Map([['v', 500n * Mi]]) };
  t.equal(localStorageViolation(p, usage, false), 'Pod ephemeral local storage usage exceeds the total limit of containers 1536Mi. ');
  t.equal(localStorageViolation(p, { containerBytes: new Map([['a', Gi]]) }, false), undefined);
  const oh = pod('oh', { limits: { 'ephemeral-storage': '1G' }, overhead: { 'ephemeral-storage': '500M' } });
  t.same(podEphemeralStorageLimit(oh), { nano: 1_500_000_000n * NANO, text: '1500M' }, 'overhead added; the first limit decides the format');
  t.equal(podEphemeralStorageLimit(pod('none')), undefined);
  t.same(podEphemeralStorageLimit(pod('bad', { limits: { 'ephemeral-storage': 'lots' } })), { nano: 0n, text: '0' }, 'an unparsable limit counts as 0');
});

t.test('container over its own limit', async (t) => {
  const p = pod('own', {
    containers: [
      { name: 'a', resources: { limits: { 'ephemeral-storage': '100Mi' } } },
      { name: 'b', resources: { limits: { 'ephemeral-storage': '10Gi' } } },
      { name: 'z', resources: { limits: { 'ephemeral-storage': '0' } } },
    ],
  });
  const usage = { containerBytes: new Map([['z', 5n * Mi], ['a', 150n * Mi]]), containerLogBytes: new Map([['a', 50n * Mi]]) };
  // The pod total (10Gi + 100Mi) is not reached: the container limit speaks.
  t.equal(localStorageViolation(p, usage, false), 'Container a exceeded its local ephemeral storage limit "100Mi". ');
  t.equal(localStorageViolation(p, usage, true), undefined, 'dedicated imagefs: only logs count, 50Mi');
  const logs = { containerBytes: new Map([['a', 150n * Mi]]), containerLogBytes: new Map([['a', 101n * Mi]]) };
  t.equal(localStorageViolation(p, logs, true), 'Container a exceeded its local ephemeral storage limit "100Mi". ');
  t.equal(localStorageViolation(p, { containerBytes: new Map([['a', 150n * Mi]]) }, true), undefined, 'no log split given: no logs counted');
});
