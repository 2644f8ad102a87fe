import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { Cgroupfs } from '../../../src/cgroups/cgroupfs.js';
import { NodeCgroups, type NodeCgroupsOptions } from '../../../src/cgroups/node-cgroups.js';
import { createLogger } from '../../../src/logging/index.js';
import type { Pod } from '../../../src/api/types.js';

const burstable = (uid: string, cpu: string): Pod => ({ metadata: { uid }, spec: { containers: [{ name: 'c', resources: { requests: { cpu } } }] } });

async function fakeHost(t: { teardown(fn: () => unknown): void }) {
  const root = await mkdtemp(join(tmpdir(), 'nodecg-'));
  t.teardown(() => rm(root, { recursive: true, force: true }));
  const controllers = new Map(['cpu', 'memory', 'pids'].map((c) => [c, join(root, c)]));
  return { root, open: async () => new Cgroupfs({ version: 1, controllers, mountPoints: [...controllers.values()] }) };
}

function logCapture() {
  const lines: { msg: string; reason?: string }[] = [];
  const log = createLogger({ verbosity: 2, format: 'json', destination: { write: (l: string) => lines.push(JSON.parse(l) as { msg: string }) } });
  return { log, lines };
}

const base = (over: Partial<NodeCgroupsOptions>): NodeCgroupsOptions => ({
  root: '/test', required: false, podPidsLimit: -1, allocatableMilliCPU: 2000n, podsMemoryLimit: 1n << 30n,
  engineRefusal: async () => undefined, log: createLogger({ verbosity: 0, format: 'json' }), ...over,
});

t.test('on: kubepods with the node\'s shares and memory, the pod below its class, the burstable class summing requests', async (t) => {
  const host = await fakeHost(t);
  const cg = new NodeCgroups(base({ openCgroupfs: host.open }));
  t.equal(await cg.ensurePod(burstable('a', '250m')), '/test/kubepods/burstable/poda');
  t.equal(await cg.ensurePod(burstable('b', '250m')), '/test/kubepods/burstable/podb');
  t.equal(cg.enabled, true);
  const read = (...p: string[]) => readFile(join(host.root, 'cpu', 'test', 'kubepods', ...p), 'utf8');
  t.same([await read('cpu.shares'), await read('besteffort', 'cpu.shares'), await read('burstable', 'cpu.shares'), await read('burstable', 'poda', 'cpu.shares')], ['2048', '2', '512', '256']);
  t.equal(await readFile(join(host.root, 'memory', 'test', 'kubepods', 'memory.limit_in_bytes'), 'utf8'), String(1 << 30));
  cg.close();
});

t.test('left at its default, an engine that cannot have them means pods without, said once', async (t) => {
  const { log, lines } = logCapture();
  let asked = 0;
  const cg = new NodeCgroups(base({ log, engineRefusal: async () => (asked++, 'the engine\'s cgroup driver is "systemd", not "cgroupfs"') }));
  t.equal(await cg.ensurePod(burstable('a', '1')), undefined);
  t.equal(await cg.ensurePod(burstable('b', '1')), undefined);
  t.equal(cg.enabled, false);
  t.equal(asked, 1, 'decided once');
  t.same(lines.filter((l) => /without cgroups/.test(l.msg)).map((l) => l.reason), ['the engine\'s cgroup driver is "systemd", not "cgroupfs"']);
});

t.test('set explicitly, the same refusal fails every pod with the reason', async (t) => {
  const cg = new NodeCgroups(base({ required: true, engineRefusal: async () => 'the engine at tcp://h:2375 is not known to share this host\'s cgroups (only a unix socket is)' }));
  await t.rejects(cg.ensurePod(burstable('a', '1')), /cgroupsPerQOS is set but pods cannot get cgroups of their own here: the engine at tcp/);
});

t.test('an engine that does not answer is asked again at the next pod', async (t) => {
  const host = await fakeHost(t);
  let fail = true;
  const cg = new NodeCgroups(base({ openCgroupfs: host.open, engineRefusal: async () => { if (fail) throw new Error('connect ENOENT'); return undefined; } }));
  await t.rejects(cg.ensurePod(burstable('a', '1')), /ENOENT/);
  t.equal(cg.enabled, undefined, 'not decided');
  fail = false;
  t.equal(await cg.ensurePod(burstable('a', '1')), '/test/kubepods/burstable/poda');
});

t.test('a cgroup filesystem nodelet may not write: pods without (default), the write error named', async (t) => {
  const { log, lines } = logCapture();
  const host = await fakeHost(t);
  // A file where the controller's directory should be: mkdir fails (ENOTDIR), as a read-only one would (EROFS).
  const file = join(host.root, 'not-a-dir');
  await writeFile(file, '');
  const cg = new NodeCgroups(base({ log, openCgroupfs: async () => new Cgroupfs({ version: 1, controllers: new Map(['cpu', 'memory', 'pids'].map((c) => [c, join(file, c)])), mountPoints: [] }) }));
  t.equal(await cg.ensurePod(burstable('a', '1')), undefined);
  t.match(lines.find((l) => /without cgroups/.test(l.msg))?.reason, /ENOTDIR/);
});

t.test('a restart with pods still running: decided at start, so their cgroups are found for stats and removal, with no ensurePod', async (t) => {
  const host = await fakeHost(t);
  // What the run before left: a pod's cgroup below its class, in every controller.
  const first = new NodeCgroups(base({ openCgroupfs: host.open }));
  t.equal(await first.ensurePod({ metadata: { uid: 'u' }, spec: { containers: [{ name: 'c' }] } }), '/test/kubepods/besteffort/podu');
  first.close();

  const cg = new NodeCgroups(base({ openCgroupfs: host.open }));
  t.equal(cg.statsLocation('u', 'cid', 'BestEffort'), undefined, 'nothing known before the decision');
  cg.start();
  await cg.removePod('elsewhere'); // awaits the decision start() began
  t.equal(cg.enabled, true);
  t.equal(cg.statsLocation('u', 'cid', 'BestEffort')?.dir('memory'), join(host.root, 'memory', 'test', 'kubepods', 'besteffort', 'podu', 'cid'), 'the container\'s cgroup below the pod\'s');
  // A plain directory holding files stands in for the cgroup here, which rmdir refuses (cgroupfs
  // does not): the refusal shows the removal was tried, where an undecided node did nothing.
  await t.rejects(cg.removePod('u'), { code: 'ENOTEMPTY' }, 'the pod\'s cgroup removal is tried');
  cg.close();
});

t.test('a stats look before any decision starts one', async (t) => {
  const host = await fakeHost(t);
  const cg = new NodeCgroups(base({ openCgroupfs: host.open }));
  t.equal(cg.statsLocation('u', undefined, 'BestEffort'), undefined, 'not known yet');
  await cg.removePod('none'); // joins the decision the look began
  t.ok(cg.statsLocation('u', undefined, 'BestEffort'), 'known once decided');
  cg.close();
});
