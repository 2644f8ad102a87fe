import t from 'tap';
import type { Container } from '../../../src/api/types.js';
import { containerHashMatches, hashContainer, legacyHashContainer } from '../../../src/runtime/hash.js';

const base: Container = { name: 'app', image: 'busybox', command: ['sleep', '3600'], resources: { requests: { cpu: '100m', memory: '64Mi' }, limits: { cpu: '200m', memory: '128Mi' } } };

t.test('the hash leaves out resources and resizePolicy, nothing else', async (t) => {
  const resized: Container = { ...base, resources: { requests: { cpu: '300m', memory: '96Mi' }, limits: { cpu: '1', memory: '256Mi' } } };
  t.equal(hashContainer(resized), hashContainer(base), 'a resize keeps the hash');
  t.equal(hashContainer({ ...base, resizePolicy: [{ resourceName: 'memory', restartPolicy: 'RestartContainer' }] }), hashContainer(base), 'so does a resize policy');
  const { resources: _r, ...bare } = base;
  t.equal(hashContainer(bare), hashContainer(base), 'no resources at all: the same hash');
  t.not(hashContainer({ ...base, image: 'busybox:2' }), hashContainer(base), 'an image change still changes it');
  t.not(hashContainer({ ...base, command: ['sleep', '1'] }), hashContainer(base), 'and a command change');
  t.not(hashContainer(base), legacyHashContainer(base), 'the legacy hash covered the resources');
});

t.test('a container created with the legacy hash is recognised, also after a resize once recorded', async (t) => {
  const label = legacyHashContainer(base);
  t.ok(containerHashMatches(label, base), 'the spec it was created from');
  t.ok(containerHashMatches(hashContainer(base), base), 'the current hash');
  const resized: Container = { ...base, resources: { limits: { cpu: '1', memory: '256Mi' } } };
  t.notOk(containerHashMatches(label, resized), 'resized, without a record: not recognised');
  t.ok(containerHashMatches(label, resized, { resources: base.resources }), 'with the resources recorded when it was first recognised');
  t.notOk(containerHashMatches(label, { ...resized, image: 'other' }, { resources: base.resources }), 'another image is still a change');
});
