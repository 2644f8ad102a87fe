import { type FSWatcher, closeSync, fstatSync, openSync, read, statSync, watch } from 'node:fs';
import { dirname } from 'node:path';
import { Readable } from 'node:stream';
import { tailStart } from './json-file.js';

/**
 * A container's json-file log followed by reading the engine's files, across rotations.
 *
 * Why not the engine: Docker's `logs --follow` loses and repeats lines when json-file rotates
 * under it (moby daemon/logger/loggerutils/logfile.go in 20.10, the family of moby#37646 and
 * kubernetes#115701). Rotation there closes `<path>`, removes `<path>.<max-file - 1>`, renames
 * `<path>.<i-1>` → `<path>.<i>` down to `<path>` → `<path>.1` and creates a new `<path>`, all under
 * the writer's lock. So a reader that holds its file open keeps every byte of it, and the file after
 * it is the name one below where its inode now sits. This reader follows that chain by inode, and
 * opens each new file as soon as it appears (the directory watch sees the rename; the end of the
 * newest file held looks too), so a file rotated away stays readable until it has been read. Lines
 * are lost only past the cap of files held (twice `max-file`), or when a file is rotated away and
 * removed before the reader saw it appear.
 *
 * The stream yields the files' raw bytes, concatenated (JsonFileDecoder makes records of them). A
 * follow ends once the container is no longer running and everything written is read (as the
 * engine's follow ends when the container stops); a plain read at the end of what is written.
 * Reads are pulled: nothing is read ahead of the consumer but one 64 KiB chunk.
 */
export interface LogFileFollowOptions {
  /** `LogPath` of the container's inspection. */
  readonly path: string;
  /** `max-file` of its LogConfig: the names `<path>`, `<path>.1` … `<path>.<maxFiles - 1>`. */
  readonly maxFiles: number;
  /** Start at the last N records (of every stream, as the engine's tail). */
  readonly tailLines?: number;
  /** Keep reading as the container writes (a follow); false ends at the end of what is written. */
  readonly follow: boolean;
  /** Whether the container still runs; asked at the end of the log, at most once per idle second. */
  readonly running: () => Promise<boolean>;
}

const CHUNK = 64 * 1024;
/** How long an idle follower waits before it looks again without being woken. */
const IDLE_MS = 1000;
/** A rotation is a few renames: a half-done one is looked at again this soon. */
const ROTATING_MS = 5;
const OPEN_ATTEMPTS = 5;
/** Reads shorter than this are copied out of the read buffer. */
const SMALL_READ = 4096;

/**
 * One open file of the log. Opened and looked at synchronously (an open and a stat of a local file
 * take microseconds, and a rotation must be caught at once, before the engine removes the file);
 * read asynchronously. Closing waits for a read in flight, so a descriptor is never reused under it.
 */
class OpenLog {
  pos = 0;
  #reading: Promise<number> | undefined;
  #closed = false;

  private constructor(
    readonly fd: number,
    readonly ino: number,
  ) {}

  /** Undefined when `name` cannot be opened (absent, or not this host's to read). */
  static open(name: string): OpenLog | undefined {
    let fd: number;
    try {
      fd = openSync(name, 'r');
    } catch {
      return undefined;
    }
    try {
      return new OpenLog(fd, fstatSync(fd).ino);
    } catch {
      closeSync(fd);
      return undefined;
    }
  }

  size(): number {
    return fstatSync(this.fd).size;
  }

  read(buf: Buffer, length: number, position: number): Promise<number> {
    const reading = new Promise<number>((resolve, reject) => read(this.fd, buf, 0, length, position, (err, n) => (err ? reject(err) : resolve(n))));
    this.#reading = reading.finally(() => (this.#reading = undefined));
    return reading;
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await this.#reading?.catch(() => undefined);
    closeSync(this.fd);
  }
}

const nameOf = (path: string, k: number): string => (k === 0 ? path : `${path}.${k}`);

function inodeOf(name: string): number | undefined {
  try {
    return statSync(name, { throwIfNoEntry: false })?.ino;
  } catch {
    return undefined;
  }
}

const closeAll = (files: readonly OpenLog[]): Promise<unknown> => Promise.all(files.map((f) => f.close()));

/**
 * Opens every file of the log, oldest first, as one consistent set (no rotation between the opens:
 * each name still holds the file opened under it afterwards), positioned for `tailLines`.
 * Undefined when the newest file cannot be opened (not this host's file, or not readable): the
 * caller then asks the engine.
 */
export async function openLogFiles(opts: LogFileFollowOptions): Promise<Readable | undefined> {
  let files: OpenLog[] = [];
  for (let attempt = 0; attempt < OPEN_ATTEMPTS; attempt++) {
    await closeAll(files);
    const found: { k: number; file: OpenLog }[] = [];
    for (let k = 0; k < Math.max(1, opts.maxFiles); k++) {
      const file = OpenLog.open(nameOf(opts.path, k));
      if (file) found.push({ k, file });
      else if (k === 0) return undefined;
    }
    files = found.map((f) => f.file).reverse();
    const current = found.map(({ k }) => inodeOf(nameOf(opts.path, k)));
    if (found.every(({ file }, i) => current[i] === file.ino)) break;
  }
  try {
    if (opts.tailLines !== undefined) files = await positionForTail(files, opts.tailLines);
  } catch (err) {
    await closeAll(files);
    throw err;
  }
  return new LogFileFollower(opts, files);
}

/** Drops the files before the last `lines` records and positions the first kept one. */
async function positionForTail(files: OpenLog[], lines: number): Promise<OpenLog[]> {
  let wanted = lines;
  for (let i = files.length - 1; i >= 0; i--) {
    const file = files[i]!;
    let end = file.size();
    let newest = i === files.length - 1;
    if (wanted === 0) {
      file.pos = end;
    }
    while (wanted > 0 && end > 0) {
      const start = Math.max(0, end - CHUNK);
      const buf = Buffer.alloc(end - start);
      const bytesRead = await file.read(buf, buf.length, start);
      const found = tailStart(buf.subarray(0, bytesRead), wanted, newest);
      newest = false;
      wanted = found.wanted;
      if (wanted === 0) file.pos = start + found.offset;
      end = start;
    }
    if (wanted === 0) {
      await closeAll(files.slice(0, i));
      return files.slice(i);
    }
  }
  return files;
}

class LogFileFollower extends Readable {
  readonly #opts: LogFileFollowOptions;
  /** The files still to read, oldest first; the last is the newest known. */
  readonly #files: OpenLog[];
  #watcher: FSWatcher | undefined;
  #wake: (() => void) | undefined;
  #pumping = false;
  /** The read buffer, kept while nothing pushed still refers to it. */
  #spare: Buffer | undefined;
  /** The directory changed since the last read began (so an idle wait must not begin). */
  #changed = false;
  /** The container was seen stopped: end at the end of what is written. */
  #finishing = false;
  /**
   * Most files held open: those the engine keeps, and as many again rotated away (removed, their
   * space held until read) for a follower that fell behind — the disk a slow client can hold.
   */
  readonly #maxHeld: number;
  /** When `running` was last asked (0: not yet, so the first end of the log asks at once). */
  #lastRunningCheck = 0;

  constructor(opts: LogFileFollowOptions, files: OpenLog[]) {
    super({ highWaterMark: CHUNK });
    this.#opts = opts;
    this.#files = files;
    this.#maxHeld = Math.max(2, opts.maxFiles * 2);
    try {
      // A directory watch wakes an idle reader on every write and rename in the log's directory.
      // A rename there may be a rotation: the new file is opened at once, so the follower keeps
      // it even if it falls behind by more files than the engine keeps (up to its cap).
      this.#watcher = watch(dirname(opts.path), { persistent: false }, (event) => {
        this.#changed = true;
        if (event === 'rename') this.#discover();
        this.#wake?.();
      });
      this.#watcher.on('error', () => this.#stopWatching());
    } catch {
      // No inotify watch to be had (limits): the idle timer alone paces the reader.
      this.#watcher = undefined;
    }
  }

  override _read(): void {
    if (this.#pumping) return;
    this.#pumping = true;
    this.#pump().then(
      () => (this.#pumping = false),
      (err: unknown) => this.destroy(err instanceof Error ? err : new Error(String(err))),
    );
  }

  override _destroy(err: Error | null, callback: (error?: Error | null) => void): void {
    this.#stopWatching();
    this.#wake?.();
    void closeAll(this.#files.splice(0)).then(() => callback(err));
  }

  #stopWatching(): void {
    this.#watcher?.close();
    this.#watcher = undefined;
  }

  /** Reads until the consumer is full, the log is done, or the stream is destroyed. */
  async #pump(): Promise<void> {
    while (!this.destroyed) {
      const file = this.#files[0];
      if (!file) return void this.push(null);
      // Whether the successor was known before this read: only then does an empty read mean the
      // file is done (the engine closed it before renaming it).
      const successorKnown = this.#files.length > 1;
      const buf = (this.#spare ??= Buffer.allocUnsafe(CHUNK));
      this.#changed = false;
      const bytesRead = await file.read(buf, CHUNK, file.pos);
      if (this.destroyed) return;
      if (bytesRead > 0) {
        file.pos += bytesRead;
        // A small read is copied, so an idle follower's buffer is reused instead of pinned.
        let chunk: Buffer;
        if (bytesRead < SMALL_READ) chunk = Buffer.from(buf.subarray(0, bytesRead));
        else {
          chunk = buf.subarray(0, bytesRead);
          this.#spare = undefined;
        }
        if (!this.push(chunk)) return;
        continue;
      }
      if (successorKnown) {
        // A rotated file read to its end: its successor is already open.
        if (this.#files[0] === file) this.#files.shift();
        await file.close();
        continue;
      }
      // The end of the newest file known. Truncated in place (max-file 1)? Start it over.
      if (file.size() < file.pos) {
        file.pos = 0;
        continue;
      }
      const rotating = this.#discover();
      // Rotated: read what is left of this file (bytes written before the rename), then go on.
      if (this.#files.length > 1) continue;
      if (this.#finishing || !this.#opts.follow) return void this.push(null);
      if (Date.now() - this.#lastRunningCheck >= IDLE_MS) {
        this.#lastRunningCheck = Date.now();
        // Asked before the last read: what the container wrote before it stopped is in the files
        // (the engine marks it stopped once its log copiers are done, moby daemon/monitor.go).
        if (!(await this.#opts.running())) this.#finishing = true;
        continue;
      }
      await this.#idle(rotating ? ROTATING_MS : IDLE_MS);
    }
  }

  /**
   * Opens the files rotated in after the newest one held, at once (synchronously: the watcher
   * calls it on every rename in the directory, and a file must be held before the engine removes
   * it). True while a rotation is half done.
   */
  #discover(): boolean {
    for (;;) {
      const last = this.#files.at(-1);
      if (!last || this.destroyed) return false;
      const next = this.#successor(last);
      if (next === undefined) return false;
      if (next === 'rotating') return true;
      this.#files.push(next);
      // The cap: past it, the oldest file not being read is let go (its lines are lost).
      while (this.#files.length > this.#maxHeld) void closeAll(this.#files.splice(1, 1));
    }
  }

  /**
   * The file that came after `file` if it was rotated away, undefined while it is still `<path>`,
   * `rotating` while the renames are half done (or the log is gone).
   */
  #successor(file: OpenLog): OpenLog | 'rotating' | undefined {
    const { path } = this.#opts;
    const newest = inodeOf(path);
    if (newest === file.ino) return undefined;
    if (newest === undefined) return 'rotating';
    let oldest = -1;
    for (let k = 1; k < this.#opts.maxFiles; k++) {
      const ino = inodeOf(nameOf(path, k));
      if (ino === undefined) continue;
      oldest = k;
      if (ino !== file.ino) continue;
      const next = OpenLog.open(nameOf(path, k - 1));
      // Ours still at k after the open: no rename moved the successor's name meanwhile (the engine
      // renames from the oldest name down, so ours would have moved first).
      if (next && inodeOf(nameOf(path, k)) === file.ino) return next;
      void next?.close();
      return 'rotating';
    }
    // Our file was rotated out of the set before it was held: go on with the oldest kept (the
    // files between are lost).
    return OpenLog.open(nameOf(path, Math.max(0, oldest))) ?? 'rotating';
  }

  /** Waits for a change in the log's directory, `ms`, or the end of the stream. */
  #idle(ms: number): Promise<void> {
    if (this.#changed || this.destroyed) return Promise.resolve();
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.#wake = undefined;
        resolve();
      };
      const timer = setTimeout(done, ms);
      this.#wake = done;
    });
  }
}
