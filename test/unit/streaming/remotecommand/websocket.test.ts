import t from 'tap';
import { once } from 'node:events';
import { mock } from 'node:test';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { pino } from 'pino';
import { WebSocket, WebSocketServer } from 'ws';
import { protocolInfo, selectWebSocketProtocol } from '../../../../src/streaming/remotecommand/negotiate.js';
import {
  OUTBOUND_HIGH_WATER_MARK,
  serveWebSocketRemoteCommand,
  type WebSocketSessionOptions,
} from '../../../../src/streaming/remotecommand/websocket.js';
import { whenConnected } from '../../../../src/streaming/remotecommand/session.js';
import type { CommandResult, StreamIO, StreamOptions, TerminalSize } from '../../../../src/streaming/types.js';
import { waitFor } from '../../../helpers/wait.js';

// --- harness: a real ws server on 127.0.0.1 running one session per connection, and a real ws client ---

interface Received {
  readonly data: Buffer;
  readonly binary: boolean;
}

interface Harness {
  readonly client: WebSocket;
  /** The server side of the connection (for bufferedAmount sampling). */
  readonly serverWs: () => WebSocket;
  readonly messages: Received[];
  /** Resolves when the client has seen 'close' (code, and the messages received by then). */
  readonly clientClosed: Promise<{ code: number; reason: string }>;
  readonly opened: Promise<void>;
  /** Resolves when serveWebSocketRemoteCommand resolves. */
  readonly sessionDone: Promise<void>;
  /** Resolves with the next message (or the first one not yet taken by an earlier call). */
  next(): Promise<Received>;
  close(): Promise<void>;
}

interface HarnessOptions {
  readonly protocols?: string[];
  readonly options: Partial<StreamOptions>;
  readonly run: (io: StreamIO) => Promise<CommandResult>;
  readonly idleTimeoutMs?: number;
  readonly closeWaitMs?: number;
  readonly command?: string[];
  readonly kind?: 'exec' | 'attach';
}

async function harness(h: HarnessOptions): Promise<Harness> {
  let serverWs: WebSocket | undefined;
  let resolveSession!: (p: Promise<void>) => void;
  const sessionStarted = new Promise<Promise<void>>((r) => (resolveSession = r));
  const wss = new WebSocketServer({
    noServer: true,
    maxPayload: 16 * 1024 * 1024,
    handleProtocols: (offered) => selectWebSocketProtocol(offered),
  });
  const server: Server = createServer();
  server.on('upgrade', (req, socket, head) => {
    wss.handleUpgrade(req, socket, head, (ws) => {
      serverWs = ws;
      const info = protocolInfo(ws.protocol);
      if (!info) throw new Error(`unexpected protocol ${ws.protocol}`);
      const opts: WebSocketSessionOptions = {
        version: info.version,
        framing: info,
        options: { stdin: false, stdout: false, stderr: false, tty: false, ...h.options },
        idleTimeoutMs: h.idleTimeoutMs ?? 0,
        closeWaitMs: h.closeWaitMs ?? 2000,
        log: pino({ level: 'silent' }),
        run: whenConnected(h.run),
        command: h.command ?? ['sh', '-c', 'cat; exit 7'],
        kind: h.kind ?? 'exec',
      };
      resolveSession(serveWebSocketRemoteCommand(ws, socket, opts));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;

  const client = new WebSocket(`ws://127.0.0.1:${port}/`, h.protocols ?? ['v5.channel.k8s.io']);
  const messages: Received[] = [];
  const waiters: Array<(m: Received) => void> = [];
  let taken = 0;
  client.on('message', (data, binary) => {
    const m = { data: Buffer.isBuffer(data) ? data : Buffer.concat(data as Buffer[]), binary };
    messages.push(m);
    const w = waiters.shift();
    if (w) {
      taken++;
      w(m);
    }
  });
  const clientClosed = new Promise<{ code: number; reason: string }>((r) =>
    client.on('close', (code, reason) => r({ code, reason: reason.toString() })),
  );
  client.on('error', () => undefined);
  const opened = new Promise<void>((resolve, reject) => {
    client.once('open', () => resolve());
    client.once('unexpected-response', (_req, res) => reject(new Error(`unexpected response ${res.statusCode}`)));
  });
  const sessionDone = sessionStarted.then((p) => p);

  return {
    client,
    serverWs: () => {
      if (!serverWs) throw new Error('not connected');
      return serverWs;
    },
    messages,
    clientClosed,
    opened,
    sessionDone,
    next: () => {
      if (taken < messages.length) return Promise.resolve(messages[taken++] as Received);
      return new Promise((r) => waiters.push(r));
    },
    close: async () => {
      client.terminate();
      serverWs?.terminate();
      wss.close();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}

/** Reads a Readable to the end. */
async function readAll(stream: NodeJS.ReadableStream | undefined): Promise<Buffer> {
  if (!stream) return Buffer.alloc(0);
  const parts: Buffer[] = [];
  for await (const c of stream) parts.push(Buffer.isBuffer(c) ? c : Buffer.from(c as string));
  return Buffer.concat(parts);
}

/**
 * A negative window: gives something that must NOT happen the time to happen. Use it only after a
 * positive event proved the system was in a position to act, and say why the length suffices.
 */
const negativeWindow = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

// --- tests ---

const SUCCESS = '{"metadata":{},"status":"Success"}';
const EXIT7 =
  '{"metadata":{},"status":"Failure","message":"command terminated with non-zero exit code: error executing command [sh -c cat; exit 7], exit code 7","reason":"NonZeroExitCode","details":{"causes":[{"reason":"ExitCode","message":"7"}]}}';

const frame = (ch: number, s: string | Buffer = '') => Buffer.concat([Buffer.from([ch]), Buffer.from(s)]);

/** The fake runtime: copies stdin to stdout, exits 7 once stdin ends. */
async function echo(io: StreamIO): Promise<CommandResult> {
  for await (const chunk of io.stdin ?? []) io.stdout?.write(chunk as Buffer);
  return { kind: 'exited', exitCode: 7 };
}

t.test('v5: first frame, stdin → stdout, CLOSE ends stdin, status then close 1000', async (t) => {
  const h = await harness({ options: { stdin: true, stdout: true, stderr: true }, run: echo });
  t.teardown(() => h.close());
  await h.opened;
  t.equal(h.client.protocol, 'v5.channel.k8s.io');
  t.same((await h.next()).data, Buffer.from([0x01]), 'one empty frame on stdout ("connected")');

  h.client.send(frame(0, 'hello-stdin\n'));
  t.same((await h.next()).data, frame(1, 'hello-stdin\n'));
  h.client.send(frame(0, 'more'));
  t.same((await h.next()).data, frame(1, 'more'));
  h.client.send(Buffer.from([0xff, 0x00]));

  const status = await h.next();
  t.ok(status.binary);
  t.equal(status.data.toString('latin1'), '\x03' + EXIT7, 'NonZeroExitCode status bytes on channel 3');
  const closed = await h.clientClosed;
  t.equal(closed.code, 1000, 'server closes with 1000 after the status');
  await h.sessionDone;
  t.equal(h.messages.length, 4, 'nothing else was sent');
});

t.test('first frame is on the lowest requested writable channel', async (t) => {
  for (const [options, want] of [
    [{ stdout: true, stderr: true }, [0x01]],
    [{ stderr: true }, [0x02]],
    [{ stdin: true }, [0x03]],
  ] as const) {
    const h = await harness({ options, run: async () => ({ kind: 'exited', exitCode: 0 }) });
    t.same((await h.next()).data, Buffer.from(want), JSON.stringify(options));
    t.equal((await h.next()).data.toString('latin1'), '\x03' + SUCCESS);
    t.equal((await h.clientClosed).code, 1000);
    await h.sessionDone;
    await h.close();
  }
});

t.test('stderr goes on channel 2; output is flushed before the status', async (t) => {
  const big = Buffer.alloc(3 * 1024 * 1024 + 5, 'a');
  const h = await harness({
    options: { stdout: true, stderr: true },
    run: async (io) => {
      io.stderr?.write('warn\n');
      // Ignore backpressure and return at once: the session must still send every byte first.
      io.stdout?.write(big);
      io.stdout?.write('tail');
      return { kind: 'exited', exitCode: 0 };
    },
  });
  t.teardown(() => h.close());
  await h.clientClosed;
  await h.sessionDone;
  const [first, ...rest] = h.messages;
  t.same(first?.data, Buffer.from([1]));
  const stderr = rest.filter((m) => m.data[0] === 2).map((m) => m.data.subarray(1).toString());
  t.same(stderr, ['warn\n']);
  const stdout = Buffer.concat(rest.filter((m) => m.data[0] === 1).map((m) => m.data.subarray(1)));
  t.equal(stdout.length, big.length + 4);
  t.equal(stdout.subarray(-4).toString(), 'tail');
  t.equal(rest.at(-1)?.data.toString(), '\x03' + SUCCESS, 'status is the last message');
  t.ok(rest.every((m) => m.data.length <= 64 * 1024 + 1), 'frames are split');
});

t.test('v4 binary: CLOSE is not a signal, stdin frames flow; success status', async (t) => {
  const h = await harness({
    protocols: ['v4.channel.k8s.io'],
    options: { stdin: true, stdout: true },
    run: async (io) => {
      const it = io.stdin![Symbol.asyncIterator]();
      const first = (await it.next()).value as Buffer;
      io.stdout!.write(first.toString().toUpperCase());
      return { kind: 'exited', exitCode: 0 };
    },
  });
  t.teardown(() => h.close());
  await h.opened;
  t.equal(h.client.protocol, 'v4.channel.k8s.io');
  t.same((await h.next()).data, Buffer.from([1]));
  h.client.send(Buffer.from([0xff, 0x00]));
  h.client.send(frame(0, 'abc'));
  t.same((await h.next()).data, frame(1, 'ABC'));
  t.equal((await h.next()).data.toString(), '\x03' + SUCCESS);
  t.equal((await h.clientClosed).code, 1000);
  await h.sessionDone;
});

t.test('v4.base64: text frames both ways', async (t) => {
  const h = await harness({ protocols: ['v4.base64.channel.k8s.io'], options: { stdin: true, stdout: true }, run: echo });
  t.teardown(() => h.close());
  await h.opened;
  t.equal(h.client.protocol, 'v4.base64.channel.k8s.io');
  const first = await h.next();
  t.equal(first.binary, false);
  t.equal(first.data.toString(), '1');
  h.client.send('0' + Buffer.from('hi\n\x00\xff', 'latin1').toString('base64'));
  h.client.send('0!!notbase64!!');
  h.client.send('0' + Buffer.from('x').toString('base64'));
  // The echo may coalesce stdin chunks; collect stdout until all 6 bytes arrived.
  let out = Buffer.alloc(0);
  while (out.length < 6) {
    const m = await h.next();
    t.equal(m.binary, false, 'text frame');
    t.equal(m.data.toString()[0], '1');
    out = Buffer.concat([out, Buffer.from(m.data.toString().slice(1), 'base64')]);
  }
  t.equal(out.toString('latin1'), 'hi\n\x00\xffx', 'invalid base64 frame was dropped');
  // v4 has no CLOSE signal: end the session from the runtime side by closing the socket.
  h.client.close(1000);
  await h.sessionDone;
});

t.test('base64.channel.k8s.io (v1): failure is plain text, success writes no status', async (t) => {
  const fail = await harness({
    protocols: ['base64.channel.k8s.io'],
    options: { stdout: true },
    run: async () => ({ kind: 'exited', exitCode: 7 }),
  });
  t.teardown(() => fail.close());
  t.equal((await fail.next()).data.toString(), '1');
  const status = await fail.next();
  t.equal(status.data.toString()[0], '3');
  t.equal(
    Buffer.from(status.data.toString().slice(1), 'base64').toString(),
    'command terminated with non-zero exit code: error executing command [sh -c cat; exit 7], exit code 7',
  );
  t.equal((await fail.clientClosed).code, 1000);

  const ok = await harness({ protocols: ['channel.k8s.io'], options: { stdout: true }, run: async () => ({ kind: 'exited', exitCode: 0 }) });
  t.teardown(() => ok.close());
  t.equal((await ok.clientClosed).code, 1000);
  t.same(
    ok.messages.map((m) => m.data),
    [Buffer.from([1])],
    'v1 success: just the connected frame, then close',
  );
});

t.test('no subprotocol offered: v1 binary', async (t) => {
  const h = await harness({ protocols: [], options: { stdout: true }, run: async () => ({ kind: 'exited', exitCode: 3 }) });
  t.teardown(() => h.close());
  await h.opened;
  t.equal(h.client.protocol, '');
  t.same((await h.next()).data, Buffer.from([1]));
  // eslint-disable-next-line no-control-regex -- the frame's first byte is the error channel, 3
  t.match((await h.next()).data.toString(), /^\x03command terminated with non-zero exit code: .*exit code 3$/);
});

t.test('run rejecting → InternalError status', async (t) => {
  const h = await harness({
    options: { stdout: true },
    run: async () => {
      throw new Error('container not running');
    },
  });
  t.teardown(() => h.close());
  await h.next();
  const status = JSON.parse((await h.next()).data.subarray(1).toString()) as { reason: string; message: string; code: number };
  t.equal(status.reason, 'InternalError');
  t.equal(status.code, 500);
  t.equal(status.message, 'Internal error occurred: error executing command in container: container not running');
  t.equal((await h.clientClosed).code, 1000);
});

t.test('tty: resizes reach the runtime (newest only); unrequested channels are discarded', async (t) => {
  const sizes: TerminalSize[] = [];
  // Resolved as the runtime takes each size: the queue keeps only the newest, so the test waits for each.
  const delivered: Array<() => void> = [];
  const taken = () => new Promise<void>((resolve) => delivered.push(resolve));
  let stdinSeen: unknown = 'unset';
  let sawResizes = false;
  const h = await harness({
    options: { stdout: true, tty: true, stderr: true },
    run: async (io) => {
      stdinSeen = io.stdin;
      sawResizes = io.resizes !== undefined;
      t.equal(io.stderr, undefined, 'no stderr with a tty');
      for await (const s of io.resizes!) {
        sizes.push(s);
        delivered.shift()?.();
        if (s.width === 1) break;
      }
      return { kind: 'exited', exitCode: 0 };
    },
  });
  t.teardown(() => h.close());
  await h.opened;
  h.client.send(frame(0, 'ignored stdin'));
  let next = taken();
  h.client.send(frame(4, '{"Width":100,"Height":30}\n'));
  await next;
  next = taken();
  h.client.send(frame(4, 'garbage\n{"Width":-1,"Height":5}\n{"Wid'));
  h.client.send(frame(4, 'th":120,"Height":40}\n'));
  await next;
  h.client.send(frame(9, 'channel out of range'));
  h.client.send(frame(4, '{"Width":1,"Height":1}'));
  t.equal((await h.clientClosed).code, 1000);
  await h.sessionDone;
  t.equal(stdinSeen, undefined);
  t.ok(sawResizes);
  t.same(sizes, [
    { width: 100, height: 30 },
    { width: 120, height: 40 },
    { width: 1, height: 1 },
  ]);
  t.same(h.messages.map((m) => m.data[0]), [1, 3], 'only the connected frame and the status');
});

t.test('no tty: no resize queue; resize frames discarded', async (t) => {
  let markReceived!: (p: Promise<unknown>) => void;
  const received = new Promise<unknown>((resolve) => (markReceived = resolve)).then((p) => p);
  const h = await harness({
    options: { stdout: true },
    run: async (io) => {
      t.equal(io.resizes, undefined);
      t.equal(io.stdin, undefined);
      // Exit only once the session has been handed the (discarded) resize frame.
      await received;
      return { kind: 'exited', exitCode: 0 };
    },
  });
  t.teardown(() => h.close());
  await h.opened;
  markReceived(once(h.serverWs(), 'message'));
  h.client.send(frame(4, '{"Width":100,"Height":30}\n'));
  t.equal((await h.clientClosed).code, 1000);
});

t.test('a client that disconnects mid-run aborts io.signal and ends stdin', async (t) => {
  let gotStdin!: () => void;
  const stdinArrived = new Promise<void>((resolve) => (gotStdin = resolve));
  let aborted = false;
  let stdinEnded = false;
  const h = await harness({
    options: { stdin: true, stdout: true, tty: true },
    run: async (io) => {
      io.stdin!.once('data', () => gotStdin());
      const drained = readAll(io.stdin).then(() => (stdinEnded = true));
      const resizesEnded = (async () => {
        for await (const _ of io.resizes!) void _;
      })();
      await new Promise<void>((r) => io.signal.addEventListener('abort', () => r()));
      aborted = io.signal.aborted;
      await Promise.all([drained, resizesEnded]);
      // Writes after the client left are discarded, not errors.
      await new Promise<void>((resolve, reject) => io.stdout!.write('late', (err) => (err ? reject(err) : resolve())));
      return { kind: 'exited', exitCode: 0 };
    },
  });
  t.teardown(() => h.close());
  await h.next();
  h.client.send(frame(0, 'partial'));
  await stdinArrived;
  h.client.terminate();
  await h.sessionDone;
  t.ok(aborted, 'signal aborted');
  t.ok(stdinEnded, 'stdin ended');
});

t.test('idle timeout closes the session; pings keep it alive and are answered', async (t) => {
  // Fake setTimeout and Date: the session's idle clock moves only when the test ticks it.
  mock.timers.enable({ apis: ['setTimeout', 'Date'] });
  t.teardown(() => mock.timers.reset());
  let abortedAt = 0;
  const started = Date.now();
  const h = await harness({
    options: { stdout: true },
    idleTimeoutMs: 250,
    closeWaitMs: 500,
    run: async (io) => {
      await new Promise<void>((r) => io.signal.addEventListener('abort', () => r()));
      abortedAt = Date.now();
      return { kind: 'exited', exitCode: 0 };
    },
  });
  t.teardown(() => h.close());
  await h.opened;
  // A ping every 80 ms for 720 ms: well past the idle timeout, yet no timeout.
  for (let i = 0; i < 9; i++) {
    h.client.ping();
    await once(h.client, 'pong');
    mock.timers.tick(80);
  }
  t.equal(abortedAt, 0, 'pings count as activity, and are answered');
  mock.timers.tick(250);
  const closed = await h.clientClosed;
  await h.sessionDone;
  t.equal(closed.code, 1001, 'going away, not a success-looking 1000');
  t.ok(abortedAt - started >= 720, 'timed out only after the pings stopped');
  t.same(h.messages.map((m) => m.data[0]), [1], 'no status after an idle timeout');
});

t.test('idle timeout 0 = off', async (t) => {
  mock.timers.enable({ apis: ['setTimeout', 'Date'] });
  t.teardown(() => mock.timers.reset());
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  const h = await harness({
    options: { stdout: true },
    idleTimeoutMs: 0,
    run: async (io) => {
      await released;
      t.notOk(io.signal.aborted);
      return { kind: 'exited', exitCode: 0 };
    },
  });
  t.teardown(() => h.close());
  await h.opened;
  mock.timers.tick(24 * 60 * 60 * 1000);
  release();
  t.equal((await h.clientClosed).code, 1000);
});

t.test('v5 CLOSE with a bad length or channel is a protocol violation', async (t) => {
  for (const bad of [Buffer.from([0xff]), Buffer.from([0xff, 0, 0]), Buffer.from([0xff, 7])]) {
    let aborted = false;
    const h = await harness({
      options: { stdin: true, stdout: true },
      run: async (io) => {
        await new Promise<void>((r) => io.signal.addEventListener('abort', () => r()));
        aborted = true;
        return { kind: 'exited', exitCode: 0 };
      },
    });
    await h.next();
    h.client.send(bad);
    t.equal((await h.clientClosed).code, 1002, bad.toString('hex'));
    await h.sessionDone;
    t.ok(aborted);
    await h.close();
  }
});

t.test('the server drops a client that never answers our close frame', async (t) => {
  let pause!: () => void;
  const paused = new Promise<void>((resolve) => (pause = resolve));
  const h = await harness({
    options: { stdout: true },
    closeWaitMs: 300,
    run: async () => {
      await paused;
      return { kind: 'exited', exitCode: 0 };
    },
  });
  t.teardown(() => h.close());
  await h.next();
  h.client.pause(); // stops reading: our close frame goes unanswered
  pause();
  const before = Date.now();
  await h.sessionDone;
  const took = Date.now() - before;
  t.ok(took >= 300, `waited closeWaitMs (${took} ms)`);
  t.ok(took < 3000, 'then terminated');
  h.client.resume();
  // The client still reads our close frame from its socket buffer, but could never answer it.
  t.equal((await h.clientClosed).code, 1000);
});

t.test('slow client: bufferedAmount stays bounded while run writes 64 MiB', async (t) => {
  const TOTAL = 64 * 1024 * 1024;
  const CHUNK = 64 * 1024;
  let written = 0;
  let maxBuffered = 0;
  /** run is waiting for stdout's 'drain'. */
  let blocked = false;
  const h = await harness({
    options: { stdout: true },
    run: async (io) => {
      const chunk = Buffer.alloc(CHUNK, 'z');
      while (written < TOTAL) {
        if (!io.stdout!.write(chunk)) {
          blocked = true;
          await once(io.stdout!, 'drain');
          blocked = false;
        }
        written += CHUNK;
        maxBuffered = Math.max(maxBuffered, h.serverWs().bufferedAmount);
      }
      return { kind: 'exited', exitCode: 0 };
    },
  });
  t.teardown(() => h.close());
  await h.next();
  h.client.pause();
  const sampler = setInterval(() => (maxBuffered = Math.max(maxBuffered, h.serverWs().bufferedAmount)), 5);
  // Held back: the socket holds the high-water mark unsent (the kernel's buffers are full, so it
  // cannot drain while the client reads nothing) and run waits for stdout's 'drain'. A run that
  // is never held back writes all 64 MiB without yielding to timers, and this times out.
  await waitFor('run to be held back by the paused client', () => (blocked && h.serverWs().bufferedAmount >= OUTBOUND_HIGH_WATER_MARK ? true : undefined), 30_000, 5);
  const writtenWhilePaused = written;
  t.ok(writtenWhilePaused < TOTAL / 2, `run was held back (${(writtenWhilePaused / 2 ** 20).toFixed(1)} MiB written while paused)`);
  // Negative window: nothing drains while the client reads nothing, so run must stay put. A run
  // let go would write its next 64 KiB chunk within microseconds; 200 ms covers a loaded machine.
  await negativeWindow(200);
  t.equal(written, writtenWhilePaused, 'and stays held back while the client reads nothing');
  t.ok(maxBuffered <= OUTBOUND_HIGH_WATER_MARK + 4 * CHUNK, `bufferedAmount bounded (max ${maxBuffered})`);
  h.client.resume();
  const closed = await h.clientClosed;
  clearInterval(sampler);
  await h.sessionDone;
  t.equal(closed.code, 1000);
  t.ok(maxBuffered <= OUTBOUND_HIGH_WATER_MARK + 4 * CHUNK, `bufferedAmount bounded throughout (max ${maxBuffered})`);
  const body = h.messages.slice(1, -1);
  t.equal(
    body.reduce((n, m) => n + m.data.length - 1, 0),
    TOTAL,
    'every byte arrived',
  );
  t.equal(h.messages.at(-1)?.data.toString(), '\x03' + SUCCESS);
});

t.test('slow stdin consumer pauses the socket instead of buffering', async (t) => {
  let release!: () => void;
  const gate = new Promise<void>((r) => (release = r));
  let received = 0;
  const h = await harness({
    options: { stdin: true, stdout: true },
    run: async (io) => {
      await gate;
      for await (const c of io.stdin!) received += (c as Buffer).length;
      return { kind: 'exited', exitCode: 0 };
    },
  });
  t.teardown(() => h.close());
  await h.next();
  const chunk = frame(0, Buffer.alloc(256 * 1024, 'q'));
  for (let i = 0; i < 64; i++) h.client.send(chunk); // 16 MiB
  h.client.send(Buffer.from([0xff, 0]));
  const server = h.serverWs();
  while (!server.isPaused && received === 0) await new Promise((resolve) => setImmediate(resolve));
  t.ok(server.isPaused, 'socket paused while nobody reads stdin');
  release();
  t.equal((await h.clientClosed).code, 1000);
  t.equal(received, 64 * 256 * 1024, 'all stdin delivered after resuming');
});
