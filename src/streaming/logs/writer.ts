import { parseTimestamp } from './time.js';

/**
 * Turns Docker's timestamped log records into the kubelet's log output (kuberuntime `logs.go`
 * `logWriter`): the Docker timestamp of every record is stripped, or with `timestamps` rewritten to
 * `RFC3339NanoFixed` + space; records before `since` are dropped; output stops after `limitBytes`,
 * cutting mid-line.
 *
 * Docker writes one record per log message: `<RFC3339Nano> <text>`, where `<text>` is one line
 * (with its `\n`) or, for a line longer than 16 KiB, one 16 KiB piece of it (without `\n`); every
 * piece carries its own timestamp. As the kubelet does for partial lines, a continuation piece gets
 * no prefix of its own, so a long line comes out as one line.
 *
 * Record bodies are passed through as views of the input (zero copy) and never collected, so a
 * line without a newline costs no memory here; only the timestamp (at most 40 bytes) is buffered.
 */

export interface LogWriterOptions {
  readonly timestamps: boolean;
  readonly since?: Date;
  readonly limitBytes?: number;
  /**
   * Whether the records carry Docker's timestamps (default true). A read that needs neither
   * `timestamps` nor `since` asks the engine for none and passes the text through as it is:
   * nothing to parse, and no engine quirk of record boundaries (Podman writes a TTY's partial
   * line as a record of its own, the next one's timestamp right after it) can leak into it.
   */
  readonly stamped?: boolean;
}

/** Docker's copier buffer: a longer line is logged as pieces of exactly this many bytes. */
export const DOCKER_LINE_PIECE = 16 * 1024;
/** Longer than any RFC 3339 timestamp plus the space (`…T15:04:05.123456789+07:00 ` is 36). */
const MAX_TIMESTAMP = 40;
const SPACE = 0x20;
const NEWLINE = 0x0a;

/** Per-stream parsing state: records of stdout and stderr arrive interleaved. */
class RecordState {
  phase: 'timestamp' | 'emit' | 'skip' = 'timestamp';
  readonly stamp = Buffer.alloc(MAX_TIMESTAMP);
  stampLen = 0;
  /** Body bytes of the current record so far (raw mode finds Docker's 16 KiB pieces by it). */
  bodyLen = 0;
  lastByte = NEWLINE;
  /** The previous record ended mid-line: this one continues it. */
  continues = false;
}

export class LogWriter {
  readonly #opts: LogWriterOptions;
  readonly #write: (chunk: Buffer) => boolean;
  readonly #states = new Map<number, RecordState>();
  #remaining: number;
  #blocked = false;

  /** `write` returns false when the destination is full (a `Writable.write` result). */
  constructor(opts: LogWriterOptions, write: (chunk: Buffer) => boolean) {
    this.#opts = opts;
    this.#write = write;
    this.#remaining = opts.limitBytes ?? Infinity;
  }

  /** `limitBytes` reached: nothing more will be written. */
  get done(): boolean {
    return this.#remaining <= 0;
  }

  /** Whether a write since the last call found the destination full (and clears the flag). */
  takeBlocked(): boolean {
    const b = this.#blocked;
    this.#blocked = false;
    return b;
  }

  /**
   * Feeds the next bytes of one stream. Framed input (stdcopy, no TTY) says with `recordEnd` whether
   * `data` completes a Docker record; raw input (TTY) passes undefined and records are found by
   * their newline or their 16 KiB length.
   */
  push(stream: number, data: Buffer, recordEnd?: boolean): void {
    if (this.#opts.stamped === false) return this.#emit(data);
    let state = this.#states.get(stream);
    if (!state) this.#states.set(stream, (state = new RecordState()));
    let off = 0;
    while (off < data.length && !this.done) {
      if (state.phase === 'timestamp') {
        off = this.#readTimestamp(state, data, off);
        if (recordEnd === undefined && this.#rawRecordDone(state)) this.#endRecord(state);
        continue;
      }
      let end = data.length;
      if (recordEnd === undefined) {
        const nl = data.indexOf(NEWLINE, off);
        end = Math.min(nl === -1 ? data.length : nl + 1, off + DOCKER_LINE_PIECE - state.bodyLen);
      }
      this.#body(state, data.subarray(off, end));
      off = end;
      if (recordEnd === undefined && this.#rawRecordDone(state)) this.#endRecord(state);
    }
    if (recordEnd && !this.done) {
      // A record that ended inside its timestamp had no body: what was read is text after all.
      if (state.phase === 'timestamp' && state.stampLen > 0) this.#notATimestamp(state);
      this.#endRecord(state);
    }
  }

  /** Raw input: a record ends with its newline, or after a full 16 KiB piece. */
  #rawRecordDone(state: RecordState): boolean {
    return state.phase !== 'timestamp' && state.bodyLen > 0 && (state.lastByte === NEWLINE || state.bodyLen >= DOCKER_LINE_PIECE);
  }

  /** Collects timestamp bytes up to the space (or a newline: then it was none); returns the new offset. */
  #readTimestamp(state: RecordState, data: Buffer, off: number): number {
    let stop = off;
    const limit = Math.min(data.length, off + MAX_TIMESTAMP - state.stampLen);
    while (stop < limit && data[stop] !== SPACE && data[stop] !== NEWLINE) stop++;
    const take = Math.min(stop + 1, limit) - off;
    data.copy(state.stamp, state.stampLen, off, off + take);
    state.stampLen += take;
    const last = state.stamp[state.stampLen - 1];
    if (last === NEWLINE) {
      this.#notATimestamp(state);
    } else if (last === SPACE) {
      const ts = parseTimestamp(state.stamp.toString('latin1', 0, state.stampLen - 1));
      if (!ts) this.#notATimestamp(state);
      else if (this.#opts.since && ts.epochMs < this.#opts.since.getTime()) state.phase = 'skip';
      else {
        state.phase = 'emit';
        if (this.#opts.timestamps && !state.continues) this.#emit(Buffer.from(`${ts.fixed} `, 'latin1'));
      }
    } else if (state.stampLen === MAX_TIMESTAMP) {
      this.#notATimestamp(state);
    }
    return off + take;
  }

  /** Bytes that were not a Docker timestamp: pass them on as text rather than lose them. */
  #notATimestamp(state: RecordState): void {
    state.phase = 'emit';
    this.#body(state, Buffer.from(state.stamp.subarray(0, state.stampLen)));
  }

  #body(state: RecordState, bytes: Buffer): void {
    if (bytes.length === 0) return;
    state.bodyLen += bytes.length;
    state.lastByte = bytes[bytes.length - 1] ?? NEWLINE;
    if (state.phase === 'emit') this.#emit(bytes);
  }

  #endRecord(state: RecordState): void {
    state.continues = state.bodyLen > 0 && state.lastByte !== NEWLINE;
    state.phase = 'timestamp';
    state.stampLen = 0;
    state.bodyLen = 0;
    state.lastByte = NEWLINE;
  }

  #emit(bytes: Buffer): void {
    if (this.#remaining <= 0) return;
    const cut = bytes.length > this.#remaining ? bytes.subarray(0, this.#remaining) : bytes;
    this.#remaining -= cut.length;
    if (!this.#write(cut)) this.#blocked = true;
  }
}
