import { createServer, type IncomingMessage } from 'node:http';
import { connect, type AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import { pino } from 'pino';
import t from 'tap';
import { WebSocketServer } from 'ws';
import { decodeFrame, REMOTE_COMMAND_CHANNELS, type Framing } from '../../../src/streaming/websocket/channels.js';
import { protocolInfo } from '../../../src/streaming/remotecommand/negotiate.js';
import { whenConnected } from '../../../src/streaming/remotecommand/session.js';
import { serveWebSocketRemoteCommand } from '../../../src/streaming/remotecommand/websocket.js';
import { fuzzSeed, prng } from '../../helpers/prng.js';
import { waitFor } from '../../helpers/wait.js';

/**
 * Seeded fuzz of the WebSocket side (B11): the channel decoder, then random frames (any opcode,
 * RSV bits, masked or not, lying lengths, fragments) against live in-process exec sessions served
 * by `ws` + serveWebSocketRemoteCommand. Must hold: nothing throws, every session settles, memory
 * stays flat. Set FUZZ_SEED to replay a failure.
 */

const SEED = fuzzSeed();

t.test('decodeFrame: random messages under every framing never throw; results respect the channel count', async (t) => {
  t.comment(`seed ${SEED} (replay with FUZZ_SEED=${SEED})`);
  const rand = prng(SEED);
  const framings: Framing[] = [
    { base64: false, supportsClose: true, channels: REMOTE_COMMAND_CHANNELS },
    { base64: false, supportsClose: false, channels: REMOTE_COMMAND_CHANNELS },
    { base64: true, supportsClose: false, channels: REMOTE_COMMAND_CHANNELS },
    { base64: false, supportsClose: true, channels: 6 },
  ];
  const counts = { data: 0, close: 0, violation: 0, ignored: 0 };
  for (let i = 0; i < 20_000; i++) {
    const framing = framings[i % framings.length]!;
    // Every tenth message is two bytes, so well-formed and malformed v5 CLOSE signals both occur.
    const len = i % 10 === 0 ? 2 : Math.floor(rand() * 12);
    const data = Buffer.from(Array.from({ length: len }, (_, k) => {
      if (k === 0 && (i % 10 === 0 || rand() < 0.3)) return i % 10 === 0 || rand() < 0.5 ? 0xff : 0x30 + Math.floor(rand() * 8);
      if (i % 10 === 0) return Math.floor(rand() * 8);
      return rand() < 0.5 ? 'QUJD=+/\r\n'.charCodeAt(Math.floor(rand() * 9)) : Math.floor(rand() * 256);
    }));
    const f = decodeFrame(data, framing);
    if (!f) counts.ignored++;
    else if (f.kind === 'violation') {
      counts.violation++;
      if (!framing.supportsClose || data[0] !== 0xff) t.fail(`seed ${SEED}: violation for ${data.toString('hex')}`);
    } else {
      counts[f.kind]++;
      if (f.channel >= framing.channels || f.channel < 0) t.fail(`seed ${SEED}: channel ${f.channel} for ${data.toString('hex')}`);
    }
  }
  t.ok(counts.data > 0 && counts.close > 0 && counts.violation > 0 && counts.ignored > 0, JSON.stringify(counts));
});

/** A client → server frame with arbitrary (possibly illegal) fields. */
function frame(rand: () => number): Buffer {
  const int = (n: number) => Math.floor(rand() * n);
  const opcodes = [0, 1, 2, 2, 2, 8, 9, 10, int(16)];
  const opcode = opcodes[int(opcodes.length)]!;
  const fin = rand() < 0.85;
  const rsv = rand() < 0.1 ? 1 + int(7) : 0;
  const masked = rand() < 0.9;
  const body = Buffer.from(Array.from({ length: rand() < 0.1 ? 126 + int(300) : int(20) }, () => (rand() < 0.4 ? int(6) : int(256))));
  if (opcode === 2 && body.length > 0 && rand() < 0.5) body[0] = rand() < 0.2 ? 0xff : int(5);
  let declared = body.length;
  const lie = rand();
  if (lie < 0.05) declared = body.length + 1 + int(100);
  else if (lie < 0.08) declared = 2 ** 20 + int(2 ** 20); // past maxPayload
  const head = [(fin ? 0x80 : 0) | (rsv << 4) | opcode];
  let ext = Buffer.alloc(0);
  if (declared < 126) head.push(declared);
  else if (declared < 65536) {
    head.push(126);
    ext = Buffer.alloc(2);
    ext.writeUInt16BE(declared);
  } else {
    head.push(127);
    ext = Buffer.alloc(8);
    ext.writeBigUInt64BE(BigInt(declared));
  }
  if (masked) head[1]! |= 0x80;
  const key = Buffer.from([int(256), int(256), int(256), int(256)]);
  const payload = masked ? Buffer.from(body.map((b, i) => b ^ key[i % 4]!)) : body;
  return Buffer.concat([Buffer.from(head), ext, masked ? key : Buffer.alloc(0), payload]);
}

t.test('live sessions: random frames never crash the server; every session settles; memory stays flat', async (t) => {
  t.comment(`seed ${SEED} (replay with FUZZ_SEED=${SEED})`);
  const rand = prng(SEED + 1);
  const log = pino({ level: 'silent' });
  const wss = new WebSocketServer({ noServer: true, maxPayload: 1024 * 1024, perMessageDeflate: false, clientTracking: false });
  let started = 0;
  let settled = 0;
  const protocols = ['v5.channel.k8s.io', 'v4.channel.k8s.io', 'v4.base64.channel.k8s.io', 'base64.channel.k8s.io', 'channel.k8s.io'];
  const server = createServer();
  server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    socket.on('error', () => socket.destroy());
    wss.handleUpgrade(req, socket, head, (ws) => {
      started++;
      const tty = String(req.url).includes('tty');
      const info = protocolInfo(ws.protocol) ?? { version: 'v1' as const, base64: false };
      void serveWebSocketRemoteCommand(ws, socket, {
        version: info.version,
        framing: info,
        options: { stdin: true, stdout: true, stderr: !tty, tty },
        idleTimeoutMs: 2000,
        closeWaitMs: 200,
        log,
        command: ['cat'],
        kind: 'exec',
        // A `cat`: stdin to stdout until EOF or the client leaves.
        run: whenConnected(async (io) => {
          await new Promise<void>((resolve) => {
            io.signal.addEventListener('abort', () => resolve());
            io.stdin?.on('data', (c: Buffer) => io.stdout?.write(c));
            io.stdin?.on('end', () => resolve());
            void (async () => {
              if (io.resizes) for await (const _ of io.resizes) void _;
            })();
          });
          return { kind: 'exited', exitCode: 0 };
        }),
      }).finally(() => settled++);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => server.close());
  const { port } = server.address() as AddressInfo;

  const heap0 = process.memoryUsage().heapUsed;
  const deadline = Date.now() + 4000;
  let i = 0;
  const one = (n: number) =>
    new Promise<void>((resolve) => {
      const s = connect(port, '127.0.0.1');
      s.on('error', () => undefined);
      const protocol = protocols[n % protocols.length]!;
      const frames = Array.from({ length: 1 + Math.floor(rand() * 6) }, () => frame(rand));
      s.write(`GET /exec${n % 3 === 0 ? '?tty' : ''} HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Protocol: ${protocol}\r\n\r\n`);
      // Sometimes the frames ride with the handshake, sometimes after it.
      if (n % 4 === 0) s.write(Buffer.concat(frames));
      else s.once('data', () => s.write(Buffer.concat(frames)));
      const timer = setTimeout(() => s.destroy(), 20 + Math.floor(rand() * 80));
      s.on('close', () => {
        clearTimeout(timer);
        resolve();
      });
    });
  while (Date.now() < deadline && i < 1500) {
    await Promise.all(Array.from({ length: 8 }, () => one(i++)));
  }
  // Sessions end asynchronously after their sockets close; a session that never settles fails the equal below.
  await waitFor('every session to settle', () => (settled >= started ? true : undefined), 5000).catch(() => undefined);
  t.comment(`${i} connections, ${started} sessions`);
  t.ok(started > 50, `${started} sessions started`);
  t.equal(settled, started, `every session settled (seed ${SEED})`);
  global.gc?.();
  const grown = process.memoryUsage().heapUsed - heap0;
  t.ok(grown < 64 * 1024 * 1024, `heap grew ${(grown / 1048576).toFixed(1)} MB`);
});
