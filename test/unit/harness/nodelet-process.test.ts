import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { NODELET_CLI, NodeletProcess, nodeletArgv, shebangNodeArgs } from '../../helpers/nodelet-process.js';

// The process harness without nodelet: fake entry points that only log, exit or ignore SIGTERM,
// and `ready: 'none'` (no /healthz probe, so no socket).

async function scratch(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'nodelet-process-unit-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

t.test('the argv: setpriv outermost, then nsenter, then the wrapper, node flags before the entry', async (t) => {
  const entry = '/x/cli.js';
  t.same(nodeletArgv({ args: ['--port', '1'], entry }), ['setpriv', '--pdeathsig', 'KILL', '--', process.execPath, entry, '--port', '1']);
  t.same(nodeletArgv({ args: ['-v', '2'], entry, dieWithParent: false, nodeArgs: ['--expose-gc'], wrapper: ['prlimit', '--nofile=200:200'], netns: 'n1' }), [
    'nsenter', '--net=/run/netns/n1', '--', 'prlimit', '--nofile=200:200', process.execPath, '--expose-gc', entry, '-v', '2',
  ]);
  t.equal(nodeletArgv({ args: [] }).at(-1), NODELET_CLI, 'the built CLI by default');
});

t.test('the shebang\'s node flags', async (t) => {
  const dir = await scratch();
  const withFlags = join(dir, 'a.js');
  const plain = join(dir, 'b.js');
  await writeFile(withFlags, '#!/usr/bin/env -S node --initial-old-space-size=64 --foo\nconsole.log(1)\n');
  await writeFile(plain, '#!/usr/bin/env node\n');
  t.same(shebangNodeArgs(withFlags), ['--initial-old-space-size=64', '--foo']);
  t.same(shebangNodeArgs(plain), []);
  t.same(nodeletArgv({ args: ['x'], entry: withFlags, shebangNodeArgs: true, nodeArgs: ['--expose-gc'], dieWithParent: false }), [process.execPath, '--initial-old-space-size=64', '--foo', '--expose-gc', withFlags, 'x'], 'the bin\'s flags first, then the caller\'s');
});

t.test('a missing entry point is a clear error', async (t) => {
  const dir = await scratch();
  await t.rejects(NodeletProcess.start(undefined, { args: [], url: 'http://127.0.0.1:1', logFile: join(dir, 'log'), entry: join(dir, 'none.js') }), /none\.js is missing: run `npm run build` first/);
});

t.test('stop: SIGTERM, the exit code; the log holds stdout and stderr', async (t) => {
  const dir = await scratch();
  const entry = join(dir, 'term.js');
  await writeFile(entry, "console.log('out', process.argv.slice(2).join(' ')); console.error('err'); process.on('SIGTERM', () => process.exit(7)); setInterval(() => {}, 1000);\n");
  const p = await NodeletProcess.start(t, { args: ['--a', 'b'], url: 'http://127.0.0.1:1/', logFile: join(dir, 'log'), entry, ready: 'none' });
  t.equal(p.url, 'http://127.0.0.1:1', 'the URL without its trailing slash');
  t.ok(p.running);
  t.type(p.pid, 'number');
  // The process must have installed its handler before the signal: its log line says so.
  await waitLog(p, 'err');
  t.equal(await p.stop(), 7, 'the exit code of the SIGTERM handler');
  t.notOk(p.running);
  t.equal(p.status, 'exit code 7');
  t.match(p.log(), /out --a b\n/);
  t.match(p.log(), /err\n/);
  t.throws(() => p.alive('fake'), /fake exited \(exit code 7\); .*log ends:\nout --a b\nerr\n/s, 'alive() names the end and the log tail');
  t.equal(await p.stop(), 7, 'stop twice: the same code, no error');
});

t.test('stop: SIGKILL after the grace period when SIGTERM is ignored; kill and restart', async (t) => {
  const dir = await scratch();
  const entry = join(dir, 'stubborn.js');
  await writeFile(entry, "process.on('SIGTERM', () => {}); console.log('up'); setInterval(() => {}, 1000);\n");
  const p = await NodeletProcess.start(t, { args: [], url: 'http://127.0.0.1:1', logFile: join(dir, 'log'), entry, ready: 'none' });
  await waitLog(p, 'up');
  const t0 = performance.now();
  t.equal(await p.stop(300), null, 'ended by a signal');
  t.equal(p.signalCode, 'SIGKILL');
  t.ok(performance.now() - t0 >= 250, 'after the grace period');
  await p.restart();
  t.ok(p.running, 'running again');
  await waitLog(p, 'up\nup');
  await p.kill('SIGKILL');
  t.equal(p.status, 'signal SIGKILL');
});

t.test('an exit before it is ready fails start with the log tail', async (t) => {
  const dir = await scratch();
  const entry = join(dir, 'exit.js');
  await writeFile(entry, "console.error('invalid flag --bogus'); process.exit(2);\n");
  // 127.0.0.1:1 refuses at once: the probe fails until the exit is seen.
  await t.rejects(NodeletProcess.start(t, { args: [], url: 'http://127.0.0.1:1', logFile: join(dir, 'log'), entry, readyTimeoutMs: 10_000 }), /nodelet exited \(exit code 2\); .*log ends:\ninvalid flag --bogus/s);
});

async function waitLog(p: NodeletProcess, text: string): Promise<void> {
  const deadline = performance.now() + 10_000;
  while (!p.log().includes(text)) {
    if (performance.now() > deadline) throw new Error(`no ${JSON.stringify(text)} in the log: ${p.log()}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}
