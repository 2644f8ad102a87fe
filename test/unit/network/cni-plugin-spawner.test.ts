import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { PluginError, type PluginJob } from '../../../src/network/cni/exec.js';
import { PLUGIN_PATH_TTL_MS, findPluginCached } from '../../../src/network/cni/invoke.js';
import { MAX_PLUGIN_SPAWNERS, pluginSpawnerCount, runInPluginSpawner } from '../../../src/network/cni/plugin-spawner.js';

const dir = mkdtempSync(join(tmpdir(), 'nodelet-cni-spawner-'));
t.teardown(() => rmSync(dir, { recursive: true, force: true }));
const script = (name: string, body: string) => {
  const p = join(dir, name);
  writeFileSync(p, `#!/bin/sh\n${body}\n`);
  chmodSync(p, 0o755);
  return p;
};
const job = (path: string, over: Partial<PluginJob> = {}): PluginJob => ({
  path,
  type: 'fake',
  command: 'ADD',
  env: { CNI_COMMAND: 'ADD', ONLY_HERE: 'x' },
  stdin: Buffer.from('{"a":1}'),
  timeoutMs: 10_000,
  ...over,
});

// First in the file: no helper runs yet.
t.test('runs that overlap the first helper\'s start wait for it; no second one starts meanwhile', async (t) => {
  t.equal(pluginSpawnerCount(), 0, 'no helper before the first run');
  const p = script('first', 'cat');
  const answers = await Promise.all([runInPluginSpawner(job(p, { stdin: Buffer.from('lo') })), runInPluginSpawner(job(p, { stdin: Buffer.from('eth0') }))]);
  t.same(answers.map((a) => a.stdout), ['lo', 'eth0']);
  t.equal(pluginSpawnerCount(), 1, 'one helper started for both');
});

t.test('the run: stdin, the given variables over the environment, stdout, stderr and exit come back', async (t) => {
  const p = script('echo', 'printf "%s|%s|" "$CNI_COMMAND" "$ONLY_HERE"; cat; echo warn >&2; exit 3');
  t.same(await runInPluginSpawner(job(p)), { stdout: 'ADD|x|{"a":1}', stderr: 'warn\n', exit: 'exit status 3', ok: false });
});

t.test('the process is started by the helper, not by nodelet', async (t) => {
  const ppid = (await runInPluginSpawner(job(script('parent', 'echo $PPID')))).stdout.trim();
  t.not(ppid, String(process.pid), 'the plugin is not a child of this process');
  t.match(readFileSync(`/proc/${ppid}/cmdline`, 'utf8'), /--nodelet-cni-plugin-spawner/, 'its parent is the helper');
});

t.test('failures keep their class and code across the process boundary', async (t) => {
  await t.rejects(runInPluginSpawner(job(join(dir, 'missing'))), { code: 'ENOENT' });
  const timedOut = await runInPluginSpawner(job(script('hang', 'exec sleep 30'), { timeoutMs: 150 })).catch((e: unknown) => e);
  t.ok(timedOut instanceof PluginError, 'a PluginError');
  t.match((timedOut as Error).message, /timed out after 150 ms/);
});

t.test('concurrent runs each get their own answer', async (t) => {
  const p = script('id', 'cat');
  const answers = await Promise.all(Array.from({ length: 8 }, (_, i) => runInPluginSpawner(job(p, { stdin: Buffer.from(String(i)) }))));
  t.same(answers.map((a) => a.stdout), ['0', '1', '2', '3', '4', '5', '6', '7']);
});

t.test('overlapping runs run at once, in up to MAX_PLUGIN_SPAWNERS helpers', async (t) => {
  // Each run waits (10 s at most) until all of them have started: serialised runs would time out.
  const barrier = join(dir, 'started');
  const p = script('barrier', `mkdir -p ${barrier}; touch ${barrier}/$$; i=0; while [ $(ls ${barrier} | wc -l) -lt ${MAX_PLUGIN_SPAWNERS} ]; do i=$((i+1)); [ $i -gt 200 ] && exit 1; sleep 0.05; done; echo ok`);
  const runs = Array.from({ length: MAX_PLUGIN_SPAWNERS }, () => runInPluginSpawner(job(p)));
  const more = runInPluginSpawner(job(script('more', 'echo more')));
  t.equal(pluginSpawnerCount(), MAX_PLUGIN_SPAWNERS, 'no more helpers than the maximum');
  t.same((await Promise.all(runs)).map((r) => r.stdout), Array(MAX_PLUGIN_SPAWNERS).fill('ok\n'), 'all ran at once');
  t.equal((await more).stdout, 'more\n', 'a run beyond the maximum waits its turn in a busy helper');
});

t.test('findPluginCached: a found path is used for PLUGIN_PATH_TTL_MS, a miss is looked up again', async (t) => {
  const bin = mkdtempSync(join(tmpdir(), 'nodelet-cni-bin-'));
  t.teardown(() => rmSync(bin, { recursive: true, force: true }));
  const now = 1_000_000;
  t.equal(await findPluginCached('later', [bin], now), undefined, 'not there yet');
  writeFileSync(join(bin, 'later'), '#!/bin/sh\n');
  chmodSync(join(bin, 'later'), 0o755);
  t.equal(await findPluginCached('later', [bin], now + 1), join(bin, 'later'), 'a miss is not remembered');
  rmSync(join(bin, 'later'));
  t.equal(await findPluginCached('later', [bin], now + PLUGIN_PATH_TTL_MS - 1), join(bin, 'later'), 'within the period: no new look');
  t.equal(await findPluginCached('later', [bin], now + PLUGIN_PATH_TTL_MS + 2), undefined, 'after it: looked up again');
});
