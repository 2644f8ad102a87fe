import type { TerminalSize } from '../types.js';

/** Longest resize object we buffer; `{"Width":65535,"Height":65535}` is 30 bytes. */
export const MAX_RESIZE_OBJECT_BYTES = 4096;
const MAX_DIMENSION = 65535;

const OPEN = 0x7b; // {
const CLOSE = 0x7d; // }
const QUOTE = 0x22; // "
const BACKSLASH = 0x5c; // \
const NEWLINE = 0x0a;

/**
 * Incremental decoder for the resize channel/stream: JSON objects as Go's `json.Encoder` writes them
 * (`{"Width":100,"Height":30}\n`), or concatenated without separators (client-node), split across
 * chunks arbitrarily.
 *
 * Differences from the kubelet's `handleResizeEvents`, which stops resizing for good on the first
 * decode error: we skip garbage and keep going.
 * - Bytes outside an object are skipped until the next `{`.
 * - A newline always ends an unfinished object (it is dropped): the wire format is one object per
 *   line, so a stray `{` cannot swallow the valid lines after it. Multi-line JSON is not supported.
 * - An object longer than `MAX_RESIZE_OBJECT_BYTES` is tracked to its end but not buffered, then dropped.
 * - Field names match case-insensitively (Go's decoder); values must be numbers and are truncated to
 *   integers; a size with width or height < 1 is skipped (cri-dockerd); larger than 65535 is clamped
 *   (Go's uint16 would reject it; a usable size beats none).
 */
export class ResizeDecoder {
  private buf: number[] = [];
  private depth = 0;
  private inString = false;
  private escaped = false;
  private overflow = false;

  /** Feeds bytes, returns the sizes completed by them (oldest first). */
  push(chunk: Uint8Array): TerminalSize[] {
    const out: TerminalSize[] = [];
    for (const b of chunk) {
      if (b === NEWLINE) {
        this.reset();
        continue;
      }
      if (this.depth === 0) {
        if (b !== OPEN) continue;
        this.depth = 1;
        this.buf.push(b);
        continue;
      }
      if (!this.overflow) {
        if (this.buf.length >= MAX_RESIZE_OBJECT_BYTES) {
          this.overflow = true;
          this.buf = [];
        } else {
          this.buf.push(b);
        }
      }
      if (this.inString) {
        if (this.escaped) this.escaped = false;
        else if (b === BACKSLASH) this.escaped = true;
        else if (b === QUOTE) this.inString = false;
        continue;
      }
      if (b === QUOTE) this.inString = true;
      else if (b === OPEN) this.depth++;
      else if (b === CLOSE && --this.depth === 0) {
        const size = this.overflow ? undefined : parseTerminalSize(Buffer.from(this.buf).toString('utf8'));
        this.reset();
        if (size) out.push(size);
      }
    }
    return out;
  }

  private reset(): void {
    this.buf = [];
    this.depth = 0;
    this.inString = false;
    this.escaped = false;
    this.overflow = false;
  }
}

/** One JSON object's text → a usable size, or undefined (invalid JSON, wrong types, < 1). */
export function parseTerminalSize(text: string): TerminalSize | undefined {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return undefined;
  let width: unknown = 0;
  let height: unknown = 0;
  // Later keys win, as Go's decoder assigns fields in document order.
  for (const [k, v] of Object.entries(value)) {
    const key = k.toLowerCase();
    if (key === 'width') width = v;
    else if (key === 'height') height = v;
  }
  if (typeof width !== 'number' || typeof height !== 'number') return undefined;
  const w = Math.trunc(width);
  const h = Math.trunc(height);
  if (!(w >= 1) || !(h >= 1)) return undefined;
  return { width: Math.min(w, MAX_DIMENSION), height: Math.min(h, MAX_DIMENSION) };
}

/**
 * The sizes handed to the runtime (`StreamIO.resizes`). Like the kubelet's buffered resize channel it
 * decouples the client from the runtime, but it keeps only the NEWEST pending size, so a client spamming
 * resizes cannot grow memory and the runtime never applies stale sizes. Single consumer. `close()` ends
 * the iteration once a still-pending size has been delivered.
 */
export class ResizeQueue implements AsyncIterable<TerminalSize> {
  private pending: TerminalSize | undefined;
  private waiter: ((r: IteratorResult<TerminalSize>) => void) | undefined;
  private closed = false;

  push(size: TerminalSize): void {
    if (this.closed) return;
    if (this.waiter) {
      const w = this.waiter;
      this.waiter = undefined;
      w({ value: size, done: false });
    } else {
      this.pending = size;
    }
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    if (this.waiter) {
      const w = this.waiter;
      this.waiter = undefined;
      w({ value: undefined, done: true });
    }
  }

  get isClosed(): boolean {
    return this.closed;
  }

  private next(): Promise<IteratorResult<TerminalSize>> {
    if (this.pending) {
      const value = this.pending;
      this.pending = undefined;
      return Promise.resolve({ value, done: false });
    }
    if (this.closed) return Promise.resolve({ value: undefined, done: true });
    if (this.waiter) return Promise.reject(new Error('ResizeQueue supports a single consumer'));
    return new Promise((resolve) => {
      this.waiter = resolve;
    });
  }

  [Symbol.asyncIterator](): AsyncIterator<TerminalSize> {
    return {
      next: () => this.next(),
      // A consumer that breaks out of `for await` stops the queue: nobody else would drain it.
      return: () => {
        this.pending = undefined;
        this.close();
        return Promise.resolve({ value: undefined, done: true });
      },
    };
  }
}
