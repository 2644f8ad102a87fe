import type { ZlibOptions } from 'node:zlib';
import { Deflate, Inflate, constants } from 'minizlib';
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

/**
 * One zlib context driven synchronously: minizlib's `write()` runs Node's zlib binding on the
 * calling thread with Z_SYNC_FLUSH (the `flush` option) and emits all the output as 'data'
 * before it returns, so one write yields exactly one block. `maxOutputLength` caps what a single
 * write may produce: the binding stops a bomb just past it, and the context is dead afterwards.
 */
class SyncZlib {
  readonly #z: Inflate | Deflate;
  readonly #max: number;
  #out: Buffer[] = [];
  #error: Error | undefined;

  constructor(z: Inflate | Deflate, max: number) {
    this.#z = z;
    this.#max = max;
    z.on('data', (chunk: Buffer) => this.#out.push(chunk));
    z.on('error', (err: unknown) => (this.#error ??= err as Error));
  }

  run(input: Buffer): Buffer {
    if (!this.#error) this.#z.write(input);
    const out = this.#out;
    this.#out = [];
    const err = this.#error;
    if (!err) return out.length === 1 ? out[0]! : Buffer.concat(out);
    const cause = err.cause instanceof Error ? err.cause : err;
    const code = (cause as NodeJS.ErrnoException).code;
    if (code === 'ERR_BUFFER_TOO_LARGE') throw new SpdyProtocolError(`header block inflates past ${this.#max} bytes`);
    throw new SpdyProtocolError(`header block zlib: ${cause.message}`);
  }

  close(): void {
    this.#error ??= new Error('header compression context closed');
    this.#z.close();
  }
}

const zlibOptions: ZlibOptions = { dictionary: SPDY3_DICTIONARY, flush: constants.Z_SYNC_FLUSH };

/** Our direction's header compressor: one per session. Blocks must be sent in call order. */
export class HeaderCompressor {
  readonly #zlib = new SyncZlib(new Deflate(zlibOptions), Number.POSITIVE_INFINITY);

  compress(headers: HeaderInput): Buffer {
    return this.#zlib.run(encodeHeaderBlock(headers));
  }

  close(): void {
    this.#zlib.close();
  }
}

/** The peer's direction: one per session, fed every received header block in frame order. */
export class HeaderDecompressor {
  readonly #zlib: SyncZlib;

  constructor(opts: { maxHeaderBytes?: number } = {}) {
    const max = opts.maxHeaderBytes ?? DEFAULT_MAX_HEADER_BYTES;
    const options: ZlibOptions = { ...zlibOptions, maxOutputLength: max }; // bounds each write, not the stream
    this.#zlib = new SyncZlib(new Inflate(options), max);
  }

  /**
   * Inflates and parses one block; throws a SpdyProtocolError on a zlib error, a block
   * inflating past `maxHeaderBytes` (stopped there), or a malformed block. Only a zlib failure
   * leaves the context unusable; the session closes either way.
   */
  decompress(block: Buffer): HeaderValues {
    if (block.length === 0) throw new SpdyProtocolError('empty compressed header block');
    return parseHeaderBlock(this.#zlib.run(block));
  }

  close(): void {
    this.#zlib.close();
  }
}
