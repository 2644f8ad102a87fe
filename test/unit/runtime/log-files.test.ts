import { closeSync, existsSync, openSync, renameSync, rmSync, writeSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import t, { type Test } from 'tap';
import { JsonFileDecoder } from '../../../src/runtime/docker/json-file.js';
import { openLogFiles } from '../../../src/runtime/docker/log-files.js';

/**
 * The follower against files rotated exactly as moby's json-file rotates them
 * (daemon/logger/loggerutils/logfile.go: close, remove `<path>.<max-1>`, rename `<path>.<i-1>` to
 * `<path>.<i>` down to `<path>` → `<path>.1`, create `<path>`), the writer and the follower
 * interleaved on one event loop: every line written after the follow began arrives once, in order.
 */
t.setTimeout(60_000);

const record = (i: number) => JSON.stringify({ log: `${String(i).padStart(8, '0')} ${'x'.repeat(60)}\n`, stream: i % 7 === 0 ? 'stderr' : 'stdout', time: '2026-12-04T16:00:00.000000001Z' }) + '\n';

/** Writes synchronously, so that nothing else runs between two yields: a burst of lines and rotations. */
class RotatingWriter {
  #size = 0;
  #fd: number;
  constructor(readonly path: string, readonly maxSize: number, readonly maxFiles: number) {
    this.#fd = openSync(path, 'a');
  }
  /** Writes lines [from, to] at once, rotating as moby does. */
  write(from: number, to: number): void {
    for (let i = from; i <= to; i++) {
      if (this.#size >= this.maxSize) this.#rotate();
      this.#size += writeSync(this.#fd, record(i));
    }
  }
  #rotate(): void {
    closeSync(this.#fd);
    rmSync(`${this.path}.${this.maxFiles - 1}`, { force: true });
    for (let i = this.maxFiles - 1; i > 1; i--) if (existsSync(`${this.path}.${i - 1}`)) renameSync(`${this.path}.${i - 1}`, `${this.path}.${i}`);
    renameSync(this.path, `${this.path}.1`);
    this.#fd = openSync(this.path, 'w');
    this.#size = 0;
  }
  close(): void {
    closeSync(this.#fd);
  }
}

/** What a follower yields, as sequence numbers; `seen(n)` resolves once line n has arrived. */
function collect(stream: NodeJS.ReadableStream & AsyncIterable<Buffer>) {
  const decoder = new JsonFileDecoder({ stamped: false, stream: 'All' });
  const numbers: number[] = [];
  const waiting = new Map<number, () => void>();
  const done = (async () => {
    for await (const chunk of stream)
      decoder.push(chunk, (_s, payload) => {
        const n = Number(payload.toString('latin1').slice(0, 8));
        numbers.push(n);
        waiting.get(n)?.();
      });
    return numbers;
  })();
  const seen = (n: number) => (numbers.includes(n) ? Promise.resolve() : new Promise<void>((resolve) => waiting.set(n, resolve)));
  return { done, seen };
}

/** A log path in a directory of its own, removed after the test. */
async function logPath(t: Test): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'log-files-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  return join(dir, 'c-json.log');
}

const consecutive = (numbers: number[], first: number, last: number) => numbers.length === last - first + 1 && numbers.every((n, i) => n === first + i);

// Each burst is written at once, then the follower is let catch up. 100 lines (9.4 KiB): at most one
// rotation between two of its reads. 400 (37 KiB): two or three, so it must find its file's
// successor under `<path>.<k>` (a follower that reopens `<path>` skips files).
for (const burst of [100, 400]) {
  t.test(`a follow begun mid-log reads every later line once, in order, across 46 rotations (bursts of ${burst})`, async (t) => {
    const path = await logPath(t);
    const writer = new RotatingWriter(path, 16 * 1024, 5);
    writer.write(1, 1000);
    let running = true;
    const follower = await openLogFiles({ path, maxFiles: 5, tailLines: 0, follow: true, running: async () => running });
    t.ok(follower, 'the files opened');
    const reader = collect(follower!);
    // About 94 bytes a record: 8000 records are some 46 rotations of 16 KiB.
    for (let from = 1001; from <= 9000; from += burst) {
      writer.write(from, from + burst - 1);
      await reader.seen(from + burst - 1);
    }
    running = false;
    const numbers = await reader.done;
    writer.close();
    t.ok(consecutive(numbers, 1001, 9000), `lines 1001–9000, each once, in order (got ${numbers.length}, first ${numbers[0]}, last ${numbers.at(-1)})`);
  });
}

t.test('tailLines across the kept files, then the follow goes on', async (t) => {
  const path = await logPath(t);
  const writer = new RotatingWriter(path, 4 * 1024, 4);
  writer.write(1, 200);
  let running = true;
  // 200 records of ~94 bytes under 4 KiB × 4: the kept files hold the last 130 or so.
  const follower = await openLogFiles({ path, maxFiles: 4, tailLines: 100, follow: true, running: async () => running });
  const reader = collect(follower!);
  await reader.seen(200);
  writer.write(201, 300);
  await reader.seen(300);
  running = false;
  t.ok(consecutive(await reader.done, 101, 300), 'the last 100 lines (they span files), then every new one');
  writer.close();

  const all = await openLogFiles({ path, maxFiles: 4, tailLines: 100_000, follow: true, running: async () => false });
  const kept = await collect(all!).done;
  t.ok(kept.length > 100 && kept.length < 200 && consecutive(kept, kept[0]!, 300), `more lines than are kept: all the kept files (${kept.length} lines)`);
});

t.test('a stopped container: its whole log, then the end', async (t) => {
  const path = await logPath(t);
  await writeFile(path, record(1) + record(2) + '{"log":"cut');
  const follower = await openLogFiles({ path, maxFiles: 5, follow: true, running: async () => false });
  t.same(await collect(follower!).done, [1, 2], 'an unfinished record is not one');
  const plain = await openLogFiles({ path, maxFiles: 5, follow: false, running: async () => true });
  t.same(await collect(plain!).done, [1, 2], 'not a follow: the end of what is written, running or not');
  t.equal(await openLogFiles({ path: join(dirname(path), 'missing'), maxFiles: 5, follow: true, running: async () => false }), undefined, 'no file: undefined (the engine is asked)');
});

t.test('a follow whose engine stops answering ends with its error, after what was written', async (t) => {
  const path = await logPath(t);
  await writeFile(path, record(1) + record(2));
  let answering = true;
  const follower = (await openLogFiles({
    path,
    maxFiles: 2,
    follow: true,
    running: async () => {
      if (!answering) throw new Error('connect ENOENT docker.sock');
      return true;
    },
  }))!;
  const reading = collect(follower);
  await reading.seen(2);
  answering = false;
  await t.rejects(reading.done, /ENOENT/, 'the follow ends with the engine error (it would otherwise wait forever)');
  t.ok(follower.destroyed, 'and the follower is closed');
});

t.test('destroying the follower closes it while it waits', async (t) => {
  const path = await logPath(t);
  await writeFile(path, record(1));
  const follower = (await openLogFiles({ path, maxFiles: 2, follow: true, running: async () => true }))!;
  const first = await new Promise<Buffer>((resolve) => follower.once('data', resolve));
  t.ok(first.length > 0);
  const closed = new Promise((resolve) => follower.once('close', resolve));
  follower.destroy();
  await closed;
  t.ok(follower.destroyed);
});
