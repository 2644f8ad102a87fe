import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { PluginError, type PluginJob } from '../../../src/network/cni/exec.js';
import { MAX_PLUGIN_THREADS, pluginThreadCount, runOnPluginThread } from '../../../src/network/cni/plugin-thread.js';

const dir = mkdtempSync(join(tmpdir(), 'nodelet-cni-thread-'));
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
  env: { PATH: process.env.PATH, CNI_COMMAND: 'ADD', ONLY_HERE: 'x' },
  stdin: Buffer.from('{"a":1}'),
  timeoutMs: 10_000,
  ...over,
});

t.test('the run: stdin, the given environment, stdout, stderr and exit come back', async (t) => {
  const p = script('echo', 'printf "%s|%s|" "$CNI_COMMAND" "$ONLY_HERE"; cat; echo warn >&2; exit 3');
  t.same(await runOnPluginThread(job(p)), { stdout: 'ADD|x|{"a":1}', stderr: 'warn\n', exit: 'exit status 3', ok: false });
});

t.test('the process is not started on the calling thread', async (t) => {
  const p = script('slow', 'sleep 0.3; echo "{}"');
  const run = runOnPluginThread(job(p));
  await new Promise((r) => setTimeout(r, 100));
  // A child spawned here would hold a ProcessWrap handle of this thread's loop while it runs.
  t.notOk(process.getActiveResourcesInfo().includes('ProcessWrap'), 'no child process handle on this thread');
  t.equal((await run).stdout, '{}\n');
});

t.test('failures keep their class and code across the thread', async (t) => {
  await t.rejects(runOnPluginThread(job(join(dir, 'missing'))), { code: 'ENOENT' });
  const timedOut = await runOnPluginThread(job(script('hang', 'exec sleep 30'), { timeoutMs: 150 })).catch((e: unknown) => e);
  t.ok(timedOut instanceof PluginError, 'a PluginError');
  t.match((timedOut as Error).message, /timed out after 150 ms/);
});

t.test('concurrent runs each get their own answer', async (t) => {
  const p = script('id', 'cat');
  const answers = await Promise.all(Array.from({ length: 8 }, (_, i) => runOnPluginThread(job(p, { stdin: Buffer.from(String(i)) }))));
  t.same(answers.map((a) => a.stdout), ['0', '1', '2', '3', '4', '5', '6', '7']);
});

t.test('overlapping runs run at once, on up to MAX_PLUGIN_THREADS threads', async (t) => {
  // Each run waits (10 s at most) until all of them have started: serialised runs would time out.
  const barrier = join(dir, 'started');
  const p = script('barrier', `mkdir -p ${barrier}; touch ${barrier}/$$; i=0; while [ $(ls ${barrier} | wc -l) -lt ${MAX_PLUGIN_THREADS} ]; do i=$((i+1)); [ $i -gt 200 ] && exit 1; sleep 0.05; done; echo ok`);
  const runs = Array.from({ length: MAX_PLUGIN_THREADS }, () => runOnPluginThread(job(p)));
  const more = runOnPluginThread(job(script('more', 'echo more')));
  t.equal(pluginThreadCount(), MAX_PLUGIN_THREADS, 'no more threads than the maximum');
  t.same((await Promise.all(runs)).map((r) => r.stdout), Array(MAX_PLUGIN_THREADS).fill('ok\n'), 'all ran at once');
  t.equal((await more).stdout, 'more\n', 'a run beyond the maximum waits its turn on a busy thread');
});
