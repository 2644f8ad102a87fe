import t from 'tap';
import { lstat, mkdtemp, readdir, readFile, readlink, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { timestampPrefix, validatePayloadPath, writeAtomically, type FileProjection } from '../../../src/volumes/atomic-writer.js';

const payload = (entries: Record<string, string | [string, number]>) =>
  new Map<string, FileProjection>(Object.entries(entries).map(([k, v]) => [k, typeof v === 'string' ? { data: v, mode: 0o644 } : { data: v[0], mode: v[1] }]));

async function tempDir(t: { teardown(fn: () => Promise<void>): void }): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'nodelet-aw-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  return join(dir, 'vol');
}

t.test('the kubelet layout: a timestamped dir, ..data, and user-visible links', async (t) => {
  const dir = await tempDir(t);
  const now = new Date(Date.UTC(2026, 0, 31, 23, 59, 58));
  t.equal(await writeAtomically(dir, payload({ username: 'admin', 'nested/dir/key': ['v', 0o400] }), { now }), true);
  const entries = (await readdir(dir)).sort();
  t.equal(entries.length, 4, entries.join(' '));
  const ts = entries.find((e) => e.startsWith('..2026_01_31_23_59_58.'));
  t.ok(ts, 'timestamped directory');
  t.same(entries.filter((e) => e !== ts), ['..data', 'nested', 'username']);
  t.equal(await readlink(join(dir, '..data')), ts, '..data points at it, relatively');
  t.equal(await readlink(join(dir, 'username')), '..data/username');
  t.equal(await readlink(join(dir, 'nested')), '..data/nested', 'only the top level is linked');
  t.equal(await readFile(join(dir, 'username'), 'utf8'), 'admin');
  t.equal(await readFile(join(dir, 'nested/dir/key'), 'utf8'), 'v');
  t.equal((await stat(join(dir, 'nested/dir/key'))).mode & 0o7777, 0o400, 'modes are exact');
  t.equal((await stat(join(dir, 'username'))).mode & 0o7777, 0o644);
  t.equal((await stat(join(dir, ts!))).mode & 0o777, 0o755, 'readable by any container user');
  t.equal(timestampPrefix(now), '..2026_01_31_23_59_58.');
});

t.test('an update swaps ..data, drops removed keys and the old directory; unchanged is a no-op', async (t) => {
  const dir = await tempDir(t);
  await writeAtomically(dir, payload({ a: '1', b: '2' }));
  const first = await readlink(join(dir, '..data'));
  t.equal(await writeAtomically(dir, payload({ a: '1', b: '2' })), false, 'same contents: nothing written');
  t.equal(await readlink(join(dir, '..data')), first);

  await writeAtomically(dir, payload({ a: '10', c: '3' }));
  const second = await readlink(join(dir, '..data'));
  t.not(second, first, 'a new timestamped directory');
  const entries = (await readdir(dir)).sort();
  t.same(entries, ['..data', second, 'a', 'c'].sort(), 'b and the old directory are gone');
  t.equal(await readFile(join(dir, 'a'), 'utf8'), '10');
  t.equal(await readFile(join(dir, 'c'), 'utf8'), '3');
  t.ok((await lstat(join(dir, 'a'))).isSymbolicLink(), 'still a link, never replaced in place');

  await writeAtomically(dir, new Map());
  t.same((await readdir(dir)).filter((e) => !e.startsWith('..')), [], 'an empty payload leaves no visible entries');
});

t.test('a reader never sees a mixed set while updates run', async (t) => {
  const dir = await tempDir(t);
  await writeAtomically(dir, payload({ x: '0', y: '0' }));
  let stop = false;
  let reads = 0;
  const mixed: string[] = [];
  const reader = (async () => {
    while (!stop) {
      // Resolve ..data once and read both files through it, as a consumer following the link does.
      const target = await readlink(join(dir, '..data')).catch(() => undefined);
      if (!target) continue;
      const [x, y] = await Promise.all([readFile(join(dir, target, 'x'), 'utf8'), readFile(join(dir, target, 'y'), 'utf8')]).catch(() => ['gone', 'gone']);
      if (x !== 'gone' && x !== y) mixed.push(`${x}/${y}`);
      reads++;
      await new Promise((r) => setImmediate(r));
    }
  })();
  for (let i = 1; i <= 30; i++) await writeAtomically(dir, payload({ x: String(i), y: String(i) }));
  stop = true;
  await reader;
  t.ok(reads > 0);
  t.same(mixed, []);
  t.equal(await readFile(join(dir, 'x'), 'utf8'), '30');
});

t.test('payload paths are checked as the kubelet does', async (t) => {
  t.equal(validatePayloadPath('ok/file'), undefined);
  t.match(validatePayloadPath('/abs'), /must be relative/);
  t.match(validatePayloadPath('a/../b'), /must not contain '\.\.'/);
  t.match(validatePayloadPath('..hidden'), /must not start with '\.\.'/);
  t.match(validatePayloadPath(''), /must not be empty/);
  t.match(validatePayloadPath('x'.repeat(256)), /255/);
  const dir = await tempDir(t);
  await t.rejects(writeAtomically(dir, payload({ '../escape': 'x' })), /must not contain/);
});

t.test('a visible entry of another kind is replaced by the link', async (t) => {
  const dir = await tempDir(t);
  await writeAtomically(dir, payload({ a: '1' }));
  await rm(join(dir, 'a'));
  await writeFile(join(dir, 'a'), 'planted');
  // Same contents in ..data, but the visible entry is wrong: it is repaired.
  t.equal(await writeAtomically(dir, payload({ a: '1' })), true);
  t.equal(await readlink(join(dir, 'a')), '..data/a');
});

t.test('modes outside 0..0777 (setuid, setgid, sticky) are refused before anything is written', async (t) => {
  const dir = await tempDir(t);
  for (const mode of [0o4755, 0o2755, 0o1777, -1, 0o10000, 1.5]) {
    await t.rejects(writeAtomically(dir, payload({ a: ['x', mode] })), /invalid mode .* for a: must be a number between 0 and 0777 \(octal\), both inclusive/);
  }
  await t.rejects(readdir(dir), { code: 'ENOENT' }, 'nothing was written');
  t.ok(await writeAtomically(dir, payload({ a: ['x', 0o777], b: ['y', 0] })));
  t.equal((await stat(join(dir, 'a'))).mode & 0o7777, 0o777);
});
