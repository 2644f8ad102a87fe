import { pino } from 'pino';
import t from 'tap';
import { SpdyConnection } from '../../../src/streaming/spdy/connection.js';
import { SpdyProtocolError } from '../../../src/streaming/spdy/errors.js';
import { encodeData, encodeGoAway, encodePing, encodeRstStream, encodeSettings, encodeSynStream, encodeWindowUpdate } from '../../../src/streaming/spdy/frames.js';
import { FrameParser } from '../../../src/streaming/spdy/parser.js';
import type { SpdyStream } from '../../../src/streaming/spdy/stream.js';
import { GoLikeCompressor, duplexPair, nextTurn, rawHeaderBlock, sleep, within } from '../streaming/spdy/fixtures/helpers.js';
import { fuzzSeed, prng } from '../../helpers/prng.js';

/**
 * Seeded fuzz of the SPDY/3.1 side (B12): mutated kubectl-like byte streams into the frame parser
 * and into whole sessions. Must hold: only SpdyProtocolError is ever thrown, nothing is buffered
 * beyond what was pushed, every session closes (once) with no stream left open, memory stays flat.
 * Set FUZZ_SEED to replay a failure.
 */

const SEED = fuzzSeed();

/** A plausible client byte stream: SYN_STREAMs with real compressed headers, DATA, control frames. */
async function session(rand: () => number): Promise<Buffer[]> {
  const int = (n: number) => Math.floor(rand() * n);
  const z = new GoLikeCompressor();
  const frames: Buffer[] = [];
  let id = 1;
  for (let k = 1 + int(10); k > 0; k--) {
    switch (int(8)) {
      case 0:
      case 1: {
        const types = ['error', 'stdin', 'stdout', 'stderr', 'resize', 'data', ''];
        const headerBlock = await z.compressRaw(rawHeaderBlock([['streamtype', types[int(types.length)]!], ['port', String(int(70000))], ['requestid', String(int(3))]]));
        frames.push(encodeSynStream({ streamId: id, associatedId: 0, priority: int(8), slot: 0, fin: rand() < 0.2, unidirectional: rand() < 0.1, headerBlock }));
        id += 2;
        break;
      }
      case 2:
      case 3:
        frames.push(encodeData(1 + 2 * int(Math.max(1, (id - 1) / 2 + 1)), Buffer.alloc(int(200), int(256)), rand() < 0.2));
        break;
      case 4:
        frames.push(encodePing(1 + 2 * int(100)));
        break;
      case 5:
        frames.push(encodeRstStream(1 + 2 * int(5), 1 + int(11)));
        break;
      case 6:
        frames.push(rand() < 0.5 ? encodeSettings([{ id: 1 + int(8), value: int(2 ** 31), flags: 0 }]) : encodeWindowUpdate(int(5), 1 + int(1 << 20)));
        break;
      default:
        if (rand() < 0.2) frames.push(encodeGoAway(0, 0));
    }
  }
  z.close();
  return frames;
}

function mutate(rand: () => number, frames: Buffer[]): Buffer {
  const bytes = Buffer.concat(frames);
  const int = (n: number) => Math.floor(rand() * n);
  const ops = int(4);
  let out = Buffer.from(bytes);
  for (let k = 0; k < ops && out.length > 0; k++) {
    const at = int(out.length);
    switch (int(4)) {
      case 0:
        out[at] = int(256);
        break;
      case 1:
        out = out.subarray(0, at);
        break;
      case 2:
        out = Buffer.concat([out.subarray(0, at), Buffer.from(Array.from({ length: 1 + int(16) }, () => int(256))), out.subarray(at)]);
        break;
      default:
        out.writeUInt8(out[at]! ^ (1 << int(8)), at);
    }
  }
  return out;
}

t.test('frame parser: mutated sessions split anywhere throw only SpdyProtocolError and buffer no more than pushed', async (t) => {
  t.comment(`seed ${SEED} (replay with FUZZ_SEED=${SEED})`);
  const rand = prng(SEED);
  let errors = 0;
  let frames = 0;
  const deadline = Date.now() + 3000;
  let i = 0;
  for (; i < 2000 && Date.now() < deadline; i++) {
    const bytes = mutate(rand, await session(rand));
    const p = new FrameParser(() => void frames++);
    let pushed = 0;
    try {
      for (let off = 0; off < bytes.length; ) {
        const n = 1 + Math.floor(rand() * 100);
        const chunk = bytes.subarray(off, off + n);
        pushed += chunk.length;
        p.push(chunk);
        off += n;
        if (p.bufferedBytes > pushed) t.fail(`seed ${SEED} iteration ${i}: buffered ${p.bufferedBytes} > pushed ${pushed}`);
      }
    } catch (err) {
      if (!(err instanceof SpdyProtocolError)) {
        t.fail(`seed ${SEED} iteration ${i}: ${String(err)} for ${bytes.toString('hex').slice(0, 200)}`);
        break;
      }
      errors++;
    }
  }
  t.ok(i >= 100, `${i} iterations, ${frames} frames parsed, ${errors} rejected`);
});

t.test('sessions: mutated client streams never throw out of SpdyConnection; each closes once with no stream left', async (t) => {
  t.comment(`seed ${SEED} (replay with FUZZ_SEED=${SEED})`);
  const rand = prng(SEED + 1);
  const log = pino({ level: 'silent' });
  const heap0 = process.memoryUsage().heapUsed;
  const deadline = Date.now() + 4000;
  let i = 0;
  let protocolErrors = 0;
  for (; i < 400 && Date.now() < deadline; i++) {
    const [server, client] = duplexPair();
    client.on('data', () => undefined);
    client.on('error', () => undefined);
    const conn = new SpdyConnection(server, { log, maxStreams: 20, maxHeaderBytes: 4096 });
    let closes = 0;
    let closeErr: Error | undefined;
    const closed = new Promise<void>((resolve) =>
      conn.on('close', (err) => {
        closes++;
        closeErr = err;
        resolve();
      }),
    );
    // The handler does what the remote-command and port-forward handlers do: reply, echo, reset.
    conn.on('stream', (s: SpdyStream) => {
      s.on('error', () => undefined);
      const r = rand();
      if (r < 0.2) s.reset();
      else {
        void s.reply();
        s.on('data', (c: Buffer) => (r < 0.6 ? s.write(c) : undefined));
        s.on('end', () => s.end());
      }
    });
    const bytes = rand() < 0.2 ? Buffer.concat(await session(rand)) : mutate(rand, await session(rand));
    for (let off = 0; off < bytes.length; ) {
      const n = 1 + Math.floor(rand() * 200);
      client.write(bytes.subarray(off, off + n));
      off += n;
    }
    // Pacing, not synchronisation: a random pause decides how much of the input the session has
    // handled when the teardown below hits it (mostly right away, sometimes a little later).
    await sleep(rand() < 0.9 ? 0 : 5);
    if (closeErr instanceof SpdyProtocolError) protocolErrors++;
    if (rand() < 0.5) client.destroy();
    else conn.close();
    await within(closed, 5000, `'close' of session ${i} (seed ${SEED})`);
    await nextTurn(); // a second 'close', if any, would be emitted by now (the session emits on nextTick)
    if (closes !== 1 || !conn.closed || conn.openStreams !== 0) {
      t.fail(`seed ${SEED} iteration ${i}: closes=${closes} closed=${conn.closed} open=${conn.openStreams}`);
      break;
    }
    if (closeErr && !(closeErr instanceof SpdyProtocolError) && !/idle|socket|closed|premature/i.test(closeErr.message)) {
      t.fail(`seed ${SEED} iteration ${i}: closed with ${String(closeErr)}`);
    }
  }
  t.ok(i >= 50, `${i} sessions, ${protocolErrors} ended by a protocol error`);
  const grown = process.memoryUsage().heapUsed - heap0;
  t.ok(grown < 64 * 1024 * 1024, `heap grew ${(grown / 1048576).toFixed(1)} MB`);
});
