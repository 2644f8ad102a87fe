import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { createServer, type AddressInfo, type Server, type Socket } from 'node:net';
import t, { type Test } from 'tap';
import { createLogger } from '../../src/logging/index.js';
import { DialError, NetnsDialers, helperCommand } from '../../src/runtime/docker/netns-dialer.js';
import { waitFor } from '../helpers/wait.js';

/**
 * The port-forward helper and its manager without Docker: the "pod" is this test's own network
 * namespace (`nsenter -t <this pid> -n`, root), the servers listen on its 127.0.0.1.
 */

const log = createLogger({ verbosity: 0, format: 'json' });

async function listen(t: Test, onConnection: (s: Socket) => void): Promise<{ server: Server; port: number; sockets: Socket[] }> {
  const sockets: Socket[] = [];
  const server = createServer((s) => {
    sockets.push(s);
    s.on('error', () => undefined);
    onConnection(s);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => {
    for (const s of sockets) s.destroy();
    return new Promise<void>((resolve) => server.close(() => resolve()));
  });
  return { server, port: (server.address() as AddressInfo).port, sockets };
}

async function closedPort(): Promise<number> {
  const srv = createServer();
  await new Promise<void>((resolve) => srv.listen(0, '127.0.0.1', resolve));
  const { port } = srv.address() as AddressInfo;
  await new Promise((resolve) => srv.close(resolve));
  return port;
}

function readAll(s: Socket): Promise<Buffer> {
  const chunks: Buffer[] = [];
  s.on('data', (c: Buffer) => chunks.push(c));
  return new Promise((resolve, reject) => {
    s.once('end', () => resolve(Buffer.concat(chunks)));
    s.once('error', reject);
  });
}

function dialers(t: Test, opts: { idleMs?: number; maxPending?: number; answerTimeoutMs?: number } = {}): NetnsDialers {
  const d = new NetnsDialers({ log, ...opts });
  t.teardown(() => d.close());
  return d;
}

const gone = (pid: number) => {
  if (!existsSync(`/proc/${pid}`)) return true;
  // A zombie of another parent counts as gone (it runs nothing, holds no namespace).
  return / Z /.test(readFileSync(`/proc/${pid}/stat`, 'utf8').replace(/^\d+ \(.*\)/, '')) ? true : undefined;
};

t.test('a dialed socket carries data both ways; a server that speaks first loses nothing', async (t) => {
  const { port } = await listen(t, (s) => {
    s.write('greeting;');
    s.pipe(s);
  });
  const d = dialers(t);
  const socket = await d.dial('sb1', process.pid, port, new AbortController().signal);
  t.ok(socket.allowHalfOpen, 'half-open allowed');
  const all = readAll(socket);
  socket.end('ping');
  t.equal((await all).toString(), 'greeting;ping', 'the greeting sent before the hand-over, then the echo; EOF after our half-close');
});

t.test('refused and invalid ports fail with their reason; the helper serves on', async (t) => {
  const d = dialers(t);
  const refused = await closedPort();
  const signal = new AbortController().signal;
  await t.rejects(d.dial('sb1', process.pid, refused, signal), new DialError(`exit status 1: connect(AF=2 127.0.0.1:${refused}): Connection refused`));
  await t.rejects(d.dial('sb1', process.pid, 70000, signal), { message: 'invalid port 70000' });
  const { port } = await listen(t, (s) => s.end('ok'));
  t.equal((await readAll(await d.dial('sb1', process.pid, port, signal))).toString(), 'ok');
  t.equal(d.pids().length, 1, 'one helper for all of it');
});

t.test('many concurrent dials over one helper', async (t) => {
  let n = 0;
  const { port } = await listen(t, (s) => s.end(`conn ${n++}`));
  const d = dialers(t);
  const signal = new AbortController().signal;
  const answers = await Promise.all(Array.from({ length: 100 }, () => d.dial('sb1', process.pid, port, signal).then(readAll)));
  t.equal(new Set(answers.map(String)).size, 100, '100 distinct connections');
  t.equal(d.pids().length, 1);
});

t.test('reuse, replacement on a new sandbox pid, release, idle exit and close', async (t) => {
  const { port } = await listen(t, (s) => s.end('x'));
  const d = dialers(t);
  const signal = new AbortController().signal;
  await readAll(await d.dial('sb1', process.pid, port, signal));
  const [first] = d.pids();
  await readAll(await d.dial('sb1', process.pid, port, signal));
  t.same(d.pids(), [first], 'the second connection reuses the helper');

  // The same sandbox under another pid (it restarted): a new helper, the old one gone.
  const sleeper = spawn('sleep', ['60'], { stdio: 'ignore' });
  t.teardown(() => sleeper.kill('SIGKILL'));
  await readAll(await d.dial('sb1', sleeper.pid ?? 0, port, signal));
  t.not(d.pids()[0], first, 'a new helper for the new pid');
  await waitFor('the old helper gone', () => gone(first ?? 0));

  // Another sandbox gets its own; release stops only that one.
  await readAll(await d.dial('sb2', process.pid, port, signal));
  t.equal(d.pids().length, 2);
  const before = d.pids();
  d.release('sb2');
  t.equal(d.pids().length, 1, 'only sb1\'s helper is left');
  const released = before.filter((p) => !d.pids().includes(p));
  await waitFor('the released helper reaped', () => (released.length === 1 && released.every((p) => gone(p)) ? true : undefined));

  // No request for idleMs: the helper exits by itself; the next dial starts another.
  const brief = dialers(t, { idleMs: 200 });
  await readAll(await brief.dial('sb1', process.pid, port, signal));
  const [idle] = brief.pids();
  await waitFor('idle helper exited', () => (brief.pids().length === 0 ? gone(idle ?? 0) : undefined), 10_000);
  await readAll(await brief.dial('sb1', process.pid, port, signal));
  t.equal(brief.pids().length, 1, 'a dial after the idle exit starts a new helper');

  const last = d.pids();
  t.equal(last.length, 1);
  await d.close();
  t.same(d.pids(), []);
  for (const p of last) t.ok(gone(p), `helper ${p} reaped when close resolved`);
  await t.rejects(d.dial('sb1', process.pid, port, signal), { message: 'nodelet is stopping' });
});

t.test('caps: open requests per helper, the answer timeout (the late socket is closed), abort', async (t) => {
  const closes: Promise<void>[] = [];
  const { port } = await listen(t, (s) => closes.push(new Promise((resolve) => s.once('close', () => resolve()))));
  const signal = new AbortController().signal;

  const capped = dialers(t, { maxPending: 2 });
  const ok = [capped.dial('sb', process.pid, port, signal), capped.dial('sb', process.pid, port, signal)];
  await t.rejects(capped.dial('sb', process.pid, port, signal), { message: 'too many connections being opened to this pod at once (limit 2); retry' });
  for (const s of await Promise.all(ok)) s.destroy();

  // 1 ms: the helper cannot even have started, so the answer comes after nodelet gave up.
  const hasty = dialers(t, { answerTimeoutMs: 1 });
  await t.rejects(hasty.dial('sb', process.pid, port, signal), { message: `exit status 1: connect(AF=2 127.0.0.1:${port}): no answer within 0 s` });
  await waitFor('the late connection reached the server', () => (closes.length === 3 ? true : undefined));
  await closes[2];
  t.pass('and nodelet closed it');

  const d = dialers(t);
  const ac = new AbortController();
  const aborted = d.dial('sb', process.pid, port, ac.signal);
  ac.abort();
  await t.rejects(aborted, { message: 'aborted' });
});

t.test('a helper that cannot enter the namespace fails its requests with nsenter\'s words', async (t) => {
  const d = dialers(t);
  // No such process: nsenter exits 1 before the helper runs.
  await t.rejects(d.dial('sb', 2 ** 22 + 1, 80, new AbortController().signal), { message: /^exit status 1: nsenter: .*/ });
  t.same(d.pids(), []);
});

t.test('the helper exits when its parent dies', async (t) => {
  const { path, execArgv } = helperCommand();
  // A stand-in parent that starts the helper, reports its pid, and is then SIGKILLed.
  const parentScript = `
    const { spawn } = require('node:child_process');
    const [path, execArgv] = JSON.parse(process.argv[1]);
    const h = spawn(process.execPath, [...execArgv, path], { stdio: ['ignore', 'ignore', 'inherit', 'ipc'] });
    h.on('spawn', () => process.stdout.write(String(h.pid) + '\\n'));
  `;
  const { NODE_OPTIONS: _omit, ...env } = process.env;
  const parent = spawn(process.execPath, ['-e', parentScript, JSON.stringify([path, execArgv])], { stdio: ['ignore', 'pipe', 'inherit'], env });
  t.teardown(() => parent.kill('SIGKILL'));
  const pid = await new Promise<number>((resolve) => parent.stdout.once('data', (d: Buffer) => resolve(Number(String(d).trim()))));
  t.ok(pid > 0 && existsSync(`/proc/${pid}`), `helper ${pid} running`);
  parent.kill('SIGKILL');
  await waitFor('the orphaned helper gone', () => gone(pid), 15_000);
  t.pass('it exited on its own');
});
