import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import type { PluginJob } from '../../../src/network/cni/exec.js';
import { MAX_DIRECT_RUNS, pluginSpawnerCount, runPlugin } from '../../../src/network/cni/plugin-spawner.js';

// A file of its own: these tests need a process where no helper has started yet.
const dir = mkdtempSync(join(tmpdir(), 'nodelet-cni-direct-'));
t.teardown(() => rmSync(dir, { recursive: true, force: true }));

/** A plugin that waits (10 s at most) until `n` runs have started, then prints its parent's pid. */
function barrierPlugin(name: string, n: number): string {
  const started = join(dir, `${name}.started`);
  const p = join(dir, name);
  writeFileSync(p, `#!/bin/sh\nmkdir -p ${started}; touch ${started}/$$; i=0\nwhile [ $(ls ${started} | wc -l) -lt ${n} ]; do i=$((i+1)); [ $i -gt 200 ] && exit 1; sleep 0.05; done\necho $PPID\n`);
  chmodSync(p, 0o755);
  return p;
}
const job = (path: string): PluginJob => ({ path, type: 'fake', command: 'ADD', env: { CNI_COMMAND: 'ADD' }, stdin: Buffer.from('{}'), timeoutMs: 15_000 });
const parentOf = async (run: Promise<{ stdout: string; ok: boolean }>) => {
  const r = await run;
  if (!r.ok) throw new Error(`plugin failed: ${r.stdout}`);
  return r.stdout.trim();
};
const isHelper = (pid: string) => /--nodelet-cni-plugin-spawner/.test(readFileSync(`/proc/${pid}/cmdline`, 'utf8'));

t.test('no helper up: one pod\'s overlapping runs are started by nodelet itself, and no helper starts', async (t) => {
  t.equal(pluginSpawnerCount(), 0, 'no helper before');
  const p = barrierPlugin('pod', MAX_DIRECT_RUNS);
  const parents = await Promise.all(Array.from({ length: MAX_DIRECT_RUNS }, () => parentOf(runPlugin(job(p)))));
  t.same(parents, Array(MAX_DIRECT_RUNS).fill(String(process.pid)), 'each plugin is a child of this process');
  t.equal(pluginSpawnerCount(), 0, 'still no helper');
});

t.test('a burst: runs beyond MAX_DIRECT_RUNS go to a helper, which then takes the runs that follow', async (t) => {
  const p = barrierPlugin('burst', MAX_DIRECT_RUNS + 1);
  const parents = await Promise.all(Array.from({ length: MAX_DIRECT_RUNS + 1 }, () => parentOf(runPlugin(job(p)))));
  t.equal(parents.filter((pid) => pid === String(process.pid)).length, MAX_DIRECT_RUNS, 'the first ones from this process');
  const other = parents.filter((pid) => pid !== String(process.pid));
  t.equal(other.length, 1, 'one from elsewhere');
  t.ok(isHelper(other[0]!), 'a plugin helper');
  t.equal(pluginSpawnerCount(), 1, 'one helper started');
  const lone = await parentOf(runPlugin(job(barrierPlugin('after', 1))));
  t.equal(lone, other[0], 'with a helper up, even a lone run goes to it');
});
