import { createHash } from 'node:crypto';
import { watch, type FSWatcher } from 'node:fs';
import { constants, open, readdir, stat } from 'node:fs/promises';
import { extname, join } from 'node:path';
import type { Pod } from '../api/types.js';
import type { Logger } from '../logging/index.js';
import { apiObjectReference } from './api-references.js';
import { parseManifest } from './manifest.js';
import { canonicalJSON } from '../api/canonical-json.js';
import { applyStaticPodDefaults, staticPodUIDOf } from './static-pod.js';

export interface StaticPodDirSourceOptions {
  /** `staticPodPath`: a directory of manifests, or (as the kubelet allows) a single manifest file. */
  dir: string;
  nodeName: string;
  /** Rescan period (`--file-check-frequency`), on top of fs.watch, which can miss events. */
  intervalMs: number;
  log: Logger;
  /** A manifest could not be used; called once per distinct problem until it changes or is fixed. */
  onError: (file: string, message: string) => void;
  /** Clock for `kubernetes.io/config.seen`; tests pass a fixed one. */
  now?: () => Date;
  /** Delay after a watch event before rescanning, so an editor's burst of writes is one scan. */
  debounceMs?: number;
}

const manifestExts = new Set(['.yaml', '.yml', '.json']);
/**
 * Largest manifest file read: etcd's default request limit (`--max-request-bytes`, 1.5 MiB), the
 * largest object a cluster can store. The apiserver takes request bodies of up to 3 MiB, but a
 * pod over etcd's limit is refused when written, so no bigger pod exists in a cluster, and in
 * cluster mode a bigger static pod could never get its mirror pod. Bigger files are refused
 * before anything is parsed, reading at most this many bytes (plus one chunk). Parsing YAML costs
 * about 70 times the file's size in memory (a 2.7 MB file of env entries took 170 MiB and 5 s per
 * scan); the cap bounds that, and an unchanged file is not parsed again (`#parsed`).
 * (The kubelet's http source reads up to 10 MiB; a 9 MiB pod passed that, then failed every
 * sandbox create against Docker.)
 */
export const MAX_MANIFEST_BYTES = 1536 * 1024;
const maxManifestBytes = MAX_MANIFEST_BYTES;

/**
 * The kubelet's file source (pkg/kubelet/config/file.go): reads every manifest in the static pod
 * directory, on fs.watch events and every `intervalMs`, and hands over the complete pod set when
 * it changed. The first scan is always emitted, so the consumer learns the source is ready.
 * Like the kubelet, a file that cannot be read or parsed contributes no pods (its pods are
 * removed) but never affects the other files.
 */
export class StaticPodDirSource {
  readonly #o: StaticPodDirSourceOptions;
  #onSnapshot: ((pods: Pod[]) => void) | undefined;
  #stopped = true;
  #watcher: FSWatcher | undefined;
  #interval: NodeJS.Timeout | undefined;
  #debounce: NodeJS.Timeout | undefined;
  /** The scan in progress; scans never overlap, a request during one queues one more. */
  #running: Promise<void> | undefined;
  #again = false;
  /** Snapshot last emitted (canonical JSON), to emit only changes. */
  #last: string | undefined;
  /** First-seen annotation per UID, so an unchanged pod keeps its `config.seen`. */
  #firstSeen = new Map<string, Date>();
  /**
   * Per file, what the last scan parsed and the SHA-256 of the text it parsed: an unchanged file
   * is not parsed again (a big YAML file costs seconds and tens of MiB each time). The parsed
   * pods are never mutated (applyStaticPodDefaults clones them).
   */
  #parsed = new Map<string, { digest: string; result: { pods: Pod[]; errors: string[] } }>();
  #nextParsed = new Map<string, { digest: string; result: { pods: Pod[]; errors: string[] } }>();
  /** Problems already passed to onError, per file. */
  #reported = new Map<string, string>();
  #missingWarned = false;

  constructor(opts: StaticPodDirSourceOptions) {
    this.#o = opts;
  }

  start(onSnapshot: (pods: Pod[]) => void): void {
    if (!this.#stopped) throw new Error('StaticPodDirSource already started');
    this.#stopped = false;
    this.#onSnapshot = onSnapshot;
    this.#last = undefined;
    this.#interval = setInterval(() => this.#trigger(), this.#o.intervalMs);
    this.#trigger();
  }

  /** Stops watching; resolves once an in-flight scan has finished (it emits nothing). */
  async stop(): Promise<void> {
    this.#stopped = true;
    clearInterval(this.#interval);
    clearTimeout(this.#debounce);
    this.#watcher?.close();
    this.#watcher = undefined;
    await this.#running;
  }

  #trigger(): void {
    if (this.#stopped) return;
    if (this.#running) {
      this.#again = true;
      return;
    }
    this.#running = this.#loop().finally(() => (this.#running = undefined));
  }

  async #loop(): Promise<void> {
    do {
      this.#again = false;
      try {
        await this.#scan();
      } catch (err) {
        this.#o.log.error({ err, path: this.#o.dir }, 'Static pod scan failed');
      }
    } while (this.#again && !this.#stopped);
  }

  #scheduleScan(): void {
    clearTimeout(this.#debounce);
    this.#debounce = setTimeout(() => this.#trigger(), this.#o.debounceMs ?? 100);
  }

  /** (Re)starts fs.watch: the path may not exist yet, or may have been replaced. */
  #watch(): void {
    if (this.#watcher || this.#stopped) return;
    try {
      const w = watch(this.#o.dir, () => this.#scheduleScan());
      w.on('error', () => {
        w.close();
        if (this.#watcher === w) this.#watcher = undefined;
        this.#scheduleScan();
      });
      this.#watcher = w;
    } catch {
      // Missing or unwatchable: the periodic rescan still works and retries the watch.
    }
  }

  async #scan(): Promise<void> {
    const files = await this.#listFiles();
    if (files === undefined) return; // unreadable this time: keep the last snapshot
    this.#watch();
    this.#nextParsed = new Map();
    const pods: Pod[] = [];
    const problems = new Map<string, string>();
    const now = (this.#o.now ?? (() => new Date()))();
    const seen = new Map<string, Date>();
    for (const file of files) {
      const result = await this.#readFile(file);
      if (result === undefined) continue;
      const errors = [...result.errors];
      // Each file fails alone: whatever one file's pods do to the code below (the parser bounds
      // them, but a bug must not stall every other manifest), they are dropped with an error.
      try {
        const filePods: Pod[] = [];
        const fileSeen: [string, Date][] = [];
        for (const parsed of result.pods) {
          // The kubelet's decode refuses such a pod outright (PreventStaticPodAPIReferences).
          const reference = apiObjectReference(parsed);
          if (reference !== undefined) {
            const name = typeof parsed.metadata?.name === 'string' ? ` pod ${JSON.stringify(parsed.metadata.name)}` : '';
            errors.push(`${file}:${name} static pods may not reference ${reference}`);
            continue;
          }
          const uid = staticPodUIDOf(parsed, this.#o.nodeName, file);
          const firstSeen = this.#firstSeen.get(uid) ?? seen.get(uid) ?? now;
          fileSeen.push([uid, firstSeen]);
          filePods.push(applyStaticPodDefaults(parsed, { nodeName: this.#o.nodeName, source: file, now: firstSeen }));
        }
        // Serialised once here (the snapshot key below), so a failure is still this file's.
        canonicalJSON(filePods);
        pods.push(...filePods);
        for (const [uid, firstSeen] of fileSeen) seen.set(uid, firstSeen);
      } catch (err) {
        this.#o.log.warn({ err, file }, 'Static pod file could not be processed, ignoring its pods');
        errors.push(`${file}: the manifest could not be processed (${err instanceof Error ? err.name : 'error'})`);
      }
      if (errors.length > 0) problems.set(file, errors.join('; '));
    }
    if (this.#stopped) return;
    this.#parsed = this.#nextParsed;
    this.#firstSeen = seen;
    this.#report(problems);
    const key = canonicalJSON(pods);
    if (key === this.#last) return;
    this.#last = key;
    try {
      this.#onSnapshot?.(pods);
    } catch (err) {
      this.#o.log.error({ err }, 'Static pod snapshot handler failed');
    }
  }

  /** Manifest paths, sorted; `[]` for a missing path; `undefined` when unreadable right now. */
  async #listFiles(): Promise<string[] | undefined> {
    const dir = this.#o.dir;
    try {
      const st = await stat(dir);
      this.#missingWarned = false;
      if (st.isFile()) return [dir];
      const names = await readdir(dir);
      return names
        .filter((n) => !n.startsWith('.') && manifestExts.has(extname(n).toLowerCase()))
        .sort()
        .map((n) => join(dir, n));
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') {
        // A vanished directory's watcher is dead; drop it so a recreated one is watched again.
        this.#watcher?.close();
        this.#watcher = undefined;
        if (!this.#missingWarned) this.#o.log.warn({ path: dir }, 'Static pod path does not exist, no static pods');
        this.#missingWarned = true;
        return [];
      }
      // e.g. EACCES or EMFILE: dropping every static pod over a transient error would be worse.
      this.#o.log.warn({ path: dir, err }, 'Unable to read static pod path, keeping the last pods');
      return undefined;
    }
  }

  /** A file's pods and problems; `undefined` when it vanished or is not a regular file. */
  async #readFile(file: string): Promise<{ pods: Pod[]; errors: string[] } | undefined> {
    try {
      // The kubelet does not recurse into directories; sockets, fifos and the like are skipped too.
      if (!(await stat(file)).isFile()) return undefined;
      const read = await readManifestFile(file, maxManifestBytes);
      if (read === 'not a file') return undefined;
      if (read === 'too large') return { pods: [], errors: [`${file}: manifest is larger than ${maxManifestBytes} bytes (the largest object etcd stores), refused unparsed`] };
      const digest = createHash('sha256').update(read).digest('hex');
      const cached = this.#parsed.get(file);
      const entry = cached?.digest === digest ? cached : { digest, result: parseManifest(read, file) };
      this.#nextParsed.set(file, entry);
      return entry.result;
    } catch (err) {
      // Deleted between listing and reading: simply gone.
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      return { pods: [], errors: [`${file}: ${(err as Error).message}`] };
    }
  }

  /** Calls onError for new or changed problems only; a fixed file is forgotten. */
  #report(problems: Map<string, string>): void {
    for (const [file, message] of problems) {
      if (this.#reported.get(file) === message) continue;
      try {
        this.#o.onError(file, message);
      } catch (err) {
        this.#o.log.error({ err, file }, 'Static pod error handler failed');
      }
    }
    this.#reported = problems;
  }
}

/**
 * A regular file's text, read through one descriptor: opened non-blocking (a FIFO swapped in
 * after the listing cannot hang the scan), checked to be a regular file, and bounded by what is
 * read, not by the size stat reports (the file may grow meanwhile; /proc's files report 0).
 */
async function readManifestFile(file: string, max: number): Promise<string | 'not a file' | 'too large'> {
  const handle = await open(file, constants.O_RDONLY | constants.O_NONBLOCK);
  try {
    const st = await handle.stat();
    if (!st.isFile()) return 'not a file';
    if (st.size > max) return 'too large';
    const chunks: Buffer[] = [];
    let total = 0;
    for (;;) {
      const buf = Buffer.allocUnsafe(Math.min(64 * 1024, max + 1 - total));
      const { bytesRead } = await handle.read(buf, 0, buf.length, null);
      if (bytesRead === 0) break;
      chunks.push(buf.subarray(0, bytesRead));
      total += bytesRead;
      if (total > max) return 'too large';
    }
    return Buffer.concat(chunks, total).toString('utf8');
  } finally {
    await handle.close();
  }
}
