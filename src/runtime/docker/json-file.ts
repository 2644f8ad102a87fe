/**
 * Records of Docker's `json-file` log driver, one JSON object per line:
 * `{"log":"text\n","stream":"stdout","time":"2006-01-02T15:04:05.999999999Z"}` (moby
 * daemon/logger/jsonfilelog/jsonlog/jsonlogbytes.go). `log` is one line with its `\n`, or a piece of
 * at most 16 KiB of a longer line without it; JSON escapes every control character, so a record's
 * only newline byte is the one that ends it.
 *
 * The decoder turns them into what the engine's logs API would have sent for the same read: the
 * record's text, with `<time> ` in front when the read is stamped (LogWriter strips or rewrites the
 * stamp), for the selected streams only (the engine filters stdout/stderr server-side).
 */
export type LogStreamSelection = 'All' | 'Stdout' | 'Stderr';

export interface JsonFileDecoderOptions {
  /** Prefix each record's text with its `time` and a space, as Docker's `timestamps=true`. */
  readonly stamped: boolean;
  readonly stream: LogStreamSelection;
}

/**
 * Longest record kept while its newline is awaited: 16 KiB of text, each byte escaped as `\u00XX`
 * at worst, plus the fields. A longer line is not the engine's and is skipped, so a corrupt file
 * cannot make the decoder hold more than this.
 */
export const MAX_JSON_RECORD = 128 * 1024;
const NEWLINE = 0x0a;

interface JsonRecord {
  readonly log?: unknown;
  readonly stream?: unknown;
  readonly time?: unknown;
}

export class JsonFileDecoder {
  readonly #opts: JsonFileDecoderOptions;
  /** The start of a record whose newline has not arrived yet. */
  #pending: Buffer[] = [];
  #pendingLength = 0;
  /** The current record outgrew MAX_JSON_RECORD: drop bytes up to its newline. */
  #skipping = false;
  /** Lines that were not a record (corrupt, or cut by a truncation), skipped. */
  skipped = 0;

  constructor(opts: JsonFileDecoderOptions) {
    this.#opts = opts;
  }

  /** Feeds the next bytes of the files; calls `emit` with each complete record's payload, in order. */
  push(chunk: Buffer, emit: (stream: 1 | 2, payload: Buffer) => void): void {
    let off = 0;
    while (off < chunk.length) {
      const nl = chunk.indexOf(NEWLINE, off);
      if (nl === -1) {
        this.#keep(chunk.subarray(off));
        return;
      }
      const piece = chunk.subarray(off, nl);
      off = nl + 1;
      if (this.#skipping) {
        this.#skipping = false;
        continue;
      }
      const length = this.#pendingLength + piece.length;
      const line = this.#pendingLength === 0 ? piece : length <= MAX_JSON_RECORD ? Buffer.concat([...this.#pending, piece]) : undefined;
      this.#pending = [];
      this.#pendingLength = 0;
      if (line && line.length <= MAX_JSON_RECORD) this.#record(line, emit);
      else this.skipped++;
    }
  }

  #keep(part: Buffer): void {
    if (this.#skipping || part.length === 0) return;
    if (this.#pendingLength + part.length > MAX_JSON_RECORD) {
      this.#pending = [];
      this.#pendingLength = 0;
      this.#skipping = true;
      this.skipped++;
      return;
    }
    // Copied: the reader reuses nothing, but a view would pin its whole chunk.
    this.#pending.push(Buffer.from(part));
    this.#pendingLength += part.length;
  }

  #record(line: Buffer, emit: (stream: 1 | 2, payload: Buffer) => void): void {
    if (line.length === 0) return;
    let rec: JsonRecord;
    try {
      rec = JSON.parse(line.toString('utf8')) as JsonRecord;
    } catch {
      this.skipped++;
      return;
    }
    if (typeof rec !== 'object' || rec === null || typeof rec.log !== 'string') {
      this.skipped++;
      return;
    }
    const stream = rec.stream === 'stderr' ? 2 : 1;
    if ((stream === 1 && this.#opts.stream === 'Stderr') || (stream === 2 && this.#opts.stream === 'Stdout')) return;
    const text = this.#opts.stamped && typeof rec.time === 'string' ? `${rec.time} ${rec.log}` : rec.log;
    if (text.length > 0) emit(stream, Buffer.from(text, 'utf8'));
  }
}

/**
 * Where the last `lines` records of `data` start: the offset just after the `lines`-th newline from
 * the end, not counting a newline in the last byte (it ends the last record). Returns the number
 * of newlines still wanted when `data` holds fewer, with offset 0 — the caller looks further back.
 */
export function tailStart(data: Buffer, lines: number, endsRecord: boolean): { offset: number; wanted: number } {
  let wanted = lines;
  let pos = data.length - (endsRecord && data[data.length - 1] === NEWLINE ? 1 : 0);
  while (wanted > 0) {
    const nl = pos > 0 ? data.lastIndexOf(NEWLINE, pos - 1) : -1;
    if (nl === -1) return { offset: 0, wanted };
    wanted--;
    if (wanted === 0) return { offset: nl + 1, wanted: 0 };
    pos = nl;
  }
  return { offset: data.length, wanted: 0 };
}
