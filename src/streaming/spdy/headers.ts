import zlib from 'node:zlib';
import { SPDY3_DICTIONARY } from './dictionary.js';
import { SpdyProtocolError } from './errors.js';

/**
 * SPDY/3 name/value header blocks (§2.6.10): a 32-bit pair count, then per pair a 32-bit name
 * length, the name, a 32-bit value length and the value. Several values of one name are joined
 * with NUL. Bytes map 1:1 to string characters (latin1), as in Node's http module.
 *
 * Each direction of a session compresses its blocks with ONE zlib stream seeded with the SPDY/3
 * dictionary and sync-flushed after every block, so the peer's inflate context spans all frames:
 * blocks must be compressed, sent, received and inflated strictly in frame order.
 */

/** All values of each header, names lower-cased. Null-prototype object. */
export type HeaderValues = Readonly<Record<string, readonly string[]>>;
/** Outgoing headers: a value array is sent as several NUL-joined values. */
export type HeaderInput = Readonly<Record<string, string | readonly string[]>>;

/** Default cap on a decompressed header block. */
export const DEFAULT_MAX_HEADER_BYTES = 64 * 1024;

export function encodeHeaderBlock(headers: HeaderInput): Buffer {
  const pairs: [string, string][] = [];
  const seen = new Set<string>();
  let size = 4;
  for (const [rawName, rawValue] of Object.entries(headers)) {
    const name = rawName.toLowerCase();
    if (name === '') throw new TypeError('empty header name');
    if (seen.has(name)) throw new TypeError(`duplicate header name: ${name}`);
    seen.add(name);
    const value = typeof rawValue === 'string' ? rawValue : rawValue.join('\0');
    pairs.push([name, value]);
    size += 8 + Buffer.byteLength(name, 'latin1') + Buffer.byteLength(value, 'latin1');
  }
  const buf = Buffer.allocUnsafe(size);
  buf.writeUInt32BE(pairs.length, 0);
  let off = 4;
  for (const [name, value] of pairs) {
    off = writeString(buf, off, name);
    off = writeString(buf, off, value);
  }
  return buf;
}

function writeString(buf: Buffer, off: number, s: string): number {
  const len = buf.write(s, off + 4, 'latin1');
  buf.writeUInt32BE(len, off);
  return off + 4 + len;
}

/**
 * Parses a decompressed block. Every count and length is checked against the bytes actually
 * present before it is used; names are lower-cased; empty or duplicate names, truncation and
 * trailing bytes are protocol errors.
 */
export function parseHeaderBlock(raw: Buffer): HeaderValues {
  if (raw.length < 4) throw new SpdyProtocolError('header block truncated');
  const count = raw.readUInt32BE(0);
  // Each pair takes at least 8 bytes (two lengths): reject impossible counts up front.
  if (count > (raw.length - 4) / 8) throw new SpdyProtocolError(`header count ${count} exceeds the ${raw.length}-byte block`);
  const out = Object.create(null) as Record<string, string[]>;
  let off = 4;
  const field = (what: string): string => {
    if (off + 4 > raw.length) throw new SpdyProtocolError(`header block truncated at ${what} length`);
    const len = raw.readUInt32BE(off);
    off += 4;
    if (len > raw.length - off) throw new SpdyProtocolError(`header ${what} length ${len} exceeds the block`);
    const s = raw.toString('latin1', off, off + len);
    off += len;
    return s;
  };
  for (let i = 0; i < count; i++) {
    const name = field('name').toLowerCase();
    if (name === '') throw new SpdyProtocolError('empty header name');
    if (out[name] !== undefined) throw new SpdyProtocolError(`duplicate header name: ${name}`);
    out[name] = field('value').split('\0');
  }
  if (off !== raw.length) throw new SpdyProtocolError(`${raw.length - off} trailing bytes after the header block`);
  return out;
}

/**
 * The first value of each header, as Go's `http.Header.Get` (the kubelet's lookup) returns it.
 * `headerValues` keeps every value for callers that care.
 */
export function firstValues(values: HeaderValues): Readonly<Record<string, string>> {
  const out = Object.create(null) as Record<string, string>;
  for (const name of Object.keys(values)) out[name] = values[name]![0] ?? '';
  return out;
}

interface Job {
  readonly chunks: Buffer[];
  size: number;
  readonly max: number;
  readonly resolve: (b: Buffer) => void;
  readonly reject: (err: Error) => void;
}

const noop = (): void => {};

/**
 * One zlib stream driven one block at a time, in call order, through the public stream API:
 * each write is processed with Z_SYNC_FLUSH (the `flush` option) and its callback fires only
 * after all its output was pushed, so reading the buffer then collects exactly that block.
 * Output is read as it is produced and counted, so a bomb is cut off just past `max` bytes.
 */
class OrderedZlib {
  readonly #z: zlib.Inflate | zlib.Deflate;
  #tail: Promise<void> = Promise.resolve();
  #job: Job | undefined;
  #error: Error | undefined;

  constructor(z: zlib.Inflate | zlib.Deflate) {
    this.#z = z;
    z.on('readable', () => this.#drain());
    z.on('error', (err: Error) => this.#fail(err));
  }

  run(input: Buffer, max: number): Promise<Buffer> {
    const result = this.#tail.then(() => this.#runOne(input, max));
    this.#tail = result.then(noop, noop);
    return result;
  }

  close(): void {
    this.#fail(new Error('header compression context closed'));
  }

  #runOne(input: Buffer, max: number): Promise<Buffer> {
    if (this.#error) return Promise.reject(this.#error);
    return new Promise<Buffer>((resolve, reject) => {
      this.#job = { chunks: [], size: 0, max, resolve, reject };
      this.#z.write(input, (err) => {
        if (err) return this.#fail(err);
        this.#drain();
        const job = this.#job;
        if (!job) return; // failed while draining
        this.#job = undefined;
        job.resolve(Buffer.concat(job.chunks, job.size));
      });
    });
  }

  #drain(): void {
    let chunk: Buffer | null;
    while ((chunk = this.#z.read() as Buffer | null) !== null) {
      const job = this.#job;
      if (!job) continue; // nothing is pending: cannot happen, but never misattribute output
      job.size += chunk.length;
      if (job.size > job.max) return this.#fail(new SpdyProtocolError(`header block inflates past ${job.max} bytes`));
      job.chunks.push(chunk);
    }
  }

  #fail(err: Error): void {
    this.#error ??= err;
    const job = this.#job;
    this.#job = undefined;
    job?.reject(err instanceof SpdyProtocolError ? err : new SpdyProtocolError(`header block zlib: ${err.message}`));
    // The context is unusable now; destroying it also stops a bomb mid-inflate.
    if (!this.#z.destroyed) this.#z.destroy();
  }
}

/** Our direction's header compressor: one per session. */
export class HeaderCompressor {
  readonly #zlib = new OrderedZlib(
    zlib.createDeflate({ dictionary: SPDY3_DICTIONARY, flush: zlib.constants.Z_SYNC_FLUSH }),
  );

  /** Compresses one block. Results must be sent in call order (they already resolve in it). */
  compress(headers: HeaderInput): Promise<Buffer> {
    return this.#zlib.run(encodeHeaderBlock(headers), Number.POSITIVE_INFINITY);
  }

  close(): void {
    this.#zlib.close();
  }
}

/** The peer's direction: one per session, fed every received header block in frame order. */
export class HeaderDecompressor {
  readonly #zlib = new OrderedZlib(
    zlib.createInflate({ dictionary: SPDY3_DICTIONARY, flush: zlib.constants.Z_SYNC_FLUSH }),
  );
  readonly #maxBytes: number;

  constructor(opts: { maxHeaderBytes?: number } = {}) {
    this.#maxBytes = opts.maxHeaderBytes ?? DEFAULT_MAX_HEADER_BYTES;
  }

  /**
   * Inflates and parses one block; rejects with a SpdyProtocolError on a zlib error, a block
   * inflating past `maxHeaderBytes` (stopped there), or a malformed block. Any rejection leaves
   * the context unusable only if zlib itself failed; the session closes either way.
   */
  async decompress(block: Buffer): Promise<HeaderValues> {
    if (block.length === 0) throw new SpdyProtocolError('empty compressed header block');
    return parseHeaderBlock(await this.#zlib.run(block, this.#maxBytes));
  }

  close(): void {
    this.#zlib.close();
  }
}
