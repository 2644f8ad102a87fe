import t from 'tap';
import { execFile, spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { chmod, chown, lstat, mkdir, mkdtemp, readdir, rename, rm, stat, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { setVolumeOwnership } from '../../../src/volumes/ownership.js';

const root = process.getuid?.() === 0;
const G = 2345;
const modeOf = async (p: string) => (await lstat(p)).mode & 0o7777;
const gidOf = async (p: string) => (await lstat(p)).gid;

/** A volume directory and, beside it, a directory "of the host" a container must not reach. */
async function layout(t: { teardown(fn: () => Promise<void>): void }) {
  const base = await mkdtemp(join(tmpdir(), 'nodelet-own-'));
  t.teardown(() => rm(base, { recursive: true, force: true }));
  const vol = join(base, 'vol');
  const host = join(base, 'host');
  await mkdir(vol);
  await mkdir(host);
  await chmod(vol, 0o777);
  await chmod(host, 0o755);
  await writeFile(join(host, 'file'), 'host', { mode: 0o644 });
  await chmod(join(host, 'file'), 0o644);
  return { vol, host };
}

t.test('group and group access on every file and directory; setgid directories', { skip: !root && 'needs root (chown)' }, async (t) => {
  const { vol } = await layout(t);
  await mkdir(join(vol, 'a', 'b'), { recursive: true });
  await chmod(join(vol, 'a'), 0o705);
  await writeFile(join(vol, 'a', 'b', 'f'), 'x', { mode: 0o600 });
  await writeFile(join(vol, 'top'), 'x', { mode: 0o604 });
  await chmod(join(vol, 'top'), 0o604);
  // A name that is not UTF-8 is reached too: names are handled as bytes.
  const odd = Buffer.concat([Buffer.from(`${vol}/`), Buffer.from([0x6e, 0xff])]);
  await writeFile(odd, 'x', { mode: 0o600 });
  await setVolumeOwnership(vol, G, { readOnly: false });
  t.equal(await gidOf(vol), G);
  t.equal(await modeOf(vol), 0o2777, 'root: setgid');
  t.equal(await modeOf(join(vol, 'a')), 0o2775, 'a directory: setgid and group rwx, other bits kept');
  t.equal(await modeOf(join(vol, 'a', 'b', 'f')), 0o660, 'a file: group read-write');
  t.equal(await modeOf(join(vol, 'top')), 0o664, 'other bits kept');
  t.equal((await lstat(odd)).gid, G, 'a non-UTF-8 name');
  t.equal(await gidOf(join(vol, 'a', 'b', 'f')), G);

  const ro = await layout(t);
  await writeFile(join(ro.vol, 'f'), 'x', { mode: 0o600 });
  await setVolumeOwnership(ro.vol, G, { readOnly: true });
  t.equal(await modeOf(join(ro.vol, 'f')), 0o640, 'read-only: group read');

  const flat = await layout(t);
  await writeFile(join(flat.vol, 'f'), 'x', { mode: 0o600 });
  await setVolumeOwnership(flat.vol, G, { readOnly: true, recursive: false });
  t.equal(await gidOf(flat.vol), G, 'recursive: false changes the root');
  t.equal(await gidOf(join(flat.vol, 'f')), 0, 'and nothing in it');
});

t.test('OnRootMismatch: a root already in place is not walked; a mismatched one is', { skip: !root && 'needs root (chown)' }, async (t) => {
  const { vol } = await layout(t);
  await writeFile(join(vol, 'f'), 'x', { mode: 0o600 });
  await chown(vol, 0, G);
  await chmod(vol, 0o2770);
  await setVolumeOwnership(vol, G, { readOnly: false, policy: 'OnRootMismatch' });
  t.equal(await gidOf(join(vol, 'f')), 0, 'root matches: nothing done');
  await chmod(vol, 0o750);
  await setVolumeOwnership(vol, G, { readOnly: false, policy: 'OnRootMismatch' });
  t.equal(await gidOf(join(vol, 'f')), G, 'root mode mismatched: walked');
  t.equal(await modeOf(vol), 0o2770);
});

t.test('a symlink to a host file or directory: only the link itself gets the group', { skip: !root && 'needs root (chown)' }, async (t) => {
  const { vol, host } = await layout(t);
  await symlink(join(host, 'file'), join(vol, 'file-link'));
  await symlink(host, join(vol, 'dir-link'));
  await symlink('../host/file', join(vol, 'relative-link'));
  await setVolumeOwnership(vol, G, { readOnly: false });
  t.equal(await gidOf(join(vol, 'file-link')), G, 'the link is lchown-ed');
  t.equal(await gidOf(join(vol, 'dir-link')), G);
  t.equal(await gidOf(join(vol, 'relative-link')), G);
  t.same([await modeOf(join(host, 'file')), await gidOf(join(host, 'file'))], [0o644, 0], 'the host file is untouched');
  t.same([await modeOf(host), await gidOf(host)], [0o755, 0], 'the host directory is untouched');

  const linkRoot = join(vol, 'dir-link');
  await t.rejects(setVolumeOwnership(linkRoot, G, { readOnly: false }), { code: /^(ELOOP|ENOTDIR)$/ }, 'a root that is a symlink is refused');
  t.equal(await gidOf(host), 0);
});

t.test('FIFOs, sockets and devices: never opened (nothing blocks), group only', { skip: !root && 'needs root (chown, mknod)' }, async (t) => {
  const { vol } = await layout(t);
  await promisify(execFile)('mkfifo', ['-m', '0600', join(vol, 'fifo')]);
  // A device node a container made: opening it on the host would run its driver.
  await promisify(execFile)('mknod', ['-m', '0600', join(vol, 'null'), 'c', '1', '3']);
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(join(vol, 'sock'), resolve));
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));
  const sockMode = await modeOf(join(vol, 'sock'));
  // A FIFO opened for reading would block until a writer came: the walk would never end.
  await setVolumeOwnership(vol, G, { readOnly: false });
  for (const name of ['fifo', 'null', 'sock']) t.equal(await gidOf(join(vol, name)), G, `${name}: group`);
  t.equal(await modeOf(join(vol, 'fifo')), 0o600, 'fifo: mode untouched');
  t.equal(await modeOf(join(vol, 'null')), 0o600, 'device: mode untouched');
  t.equal(await modeOf(join(vol, 'sock')), sockMode, 'socket: mode untouched');
});

/** A swapper: starts, then runs until `stop` resolves, and says how many swaps it made. */
type Swapper = (vol: string, stop: Promise<void>) => Promise<{ ready: Promise<void>; done: Promise<number> }>;

/** rename(2) by turns (four renames: `d` is missing for an instant twice a round), in this process. */
const renameLoop: Swapper = async (vol, stop) => {
  let stopped = false;
  void stop.then(() => (stopped = true));
  const done = (async () => {
    let swaps = 0;
    while (!stopped) {
      await rename(join(vol, 'd'), join(vol, 't'));
      await rename(join(vol, 'l'), join(vol, 'd'));
      await rename(join(vol, 'd'), join(vol, 'l'));
      await rename(join(vol, 't'), join(vol, 'd'));
      swaps++;
    }
    return swaps;
  })();
  return { ready: Promise.resolve(), done };
};

/** renameat2(RENAME_EXCHANGE) in a tight loop, the attack's own tool (`d` never missing), in a child process. */
const exchangeSource = `import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
a, b, stop = os.fsencode(sys.argv[1]), os.fsencode(sys.argv[2]), sys.argv[3]
print('ready', flush=True)
n = 0
while n < 10000000 and (n % 64 or not os.path.exists(stop)):
    if libc.renameat2(-100, a, -100, b, 2) != 0: sys.exit('renameat2: ' + os.strerror(ctypes.get_errno()))
    n += 1
print(n, flush=True)
`;
const pythonExchange = await promisify(execFile)('python3', ['-c', 'import ctypes; ctypes.CDLL(None).renameat2']).then(() => true, () => false);
const exchangeLoop: Swapper = async (vol, stop) => {
  const stopFile = `${vol}.stop`;
  const child = spawn('python3', ['-c', exchangeSource, join(vol, 'd'), join(vol, 'l'), stopFile], { stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  const ready = new Promise<void>((resolve, reject) => {
    child.stdout.on('data', (b: Buffer) => {
      out += b.toString();
      if (out.startsWith('ready\n')) resolve();
    });
    child.on('exit', () => reject(new Error(`swapper exited early: ${out}`)));
  });
  const exited = new Promise<number | null>((resolve) => child.on('exit', resolve));
  void stop.then(() => writeFile(stopFile, ''));
  const done = exited.then((code) => {
    if (code !== 0) throw new Error(`swapper failed (${code}): ${out}`);
    return Number(out.split('\n')[1]);
  });
  return { ready, done };
};

for (const [how, swapper, skip] of [
  ['renames in a loop', renameLoop, false],
  ['renameat2 RENAME_EXCHANGE in a loop', exchangeLoop, !pythonExchange && 'needs python3 with renameat2'],
] as const) {
  t.test(`a directory swapped for a symlink to the host while the walk runs (${how}) never redirects it`, { skip: (!root && 'needs root (chown)') || skip }, async (t) => {
    const { vol, host } = await layout(t);
    // The host directory holds the names the container's directory holds, as an attacker arranges.
    const names = Array.from({ length: 150 }, (_, i) => `f${i}`);
    await mkdir(join(vol, 'd'));
    await mkdir(join(host, 'sub'));
    await mkdir(join(vol, 'd', 'sub'));
    for (const n of names) {
      await writeFile(join(vol, 'd', n), 'in', { mode: 0o600 });
      await writeFile(join(host, n), 'host', { mode: 0o644 });
      await chmod(join(host, n), 0o644);
    }
    await chmod(join(host, 'sub'), 0o755);
    await symlink(host, join(vol, 'l'));
    await writeFile(join(vol, 'keep'), 'x', { mode: 0o600 });

    let stop = () => {};
    const stopped = new Promise<void>((resolve) => (stop = resolve));
    const swapping = await swapper(vol, stopped);
    const rounds: Array<string | undefined> = [];
    try {
      await swapping.ready;
      for (let round = 0; round < 8; round++) rounds.push(await setVolumeOwnership(vol, G, { readOnly: false }).then(() => undefined, (err: Error) => err.message));
    } finally {
      stop();
    }
    const swaps = await swapping.done;
    t.ok(swaps > 0, `the swapper ran (${swaps} swaps)`);
    t.same(rounds.filter(Boolean), [], 'every walk completed');
    t.equal(await gidOf(join(vol, 'keep')), G, 'the volume was walked');
    t.same([await modeOf(host), await gidOf(host)], [0o755, 0], 'the host directory is untouched');
    t.same([await modeOf(join(host, 'sub')), await gidOf(join(host, 'sub'))], [0o755, 0], 'and the directory in it');
    const touched: string[] = [];
    for (const n of [...names, 'file']) {
      const st = await stat(join(host, n));
      if (st.gid !== 0 || (st.mode & 0o7777) !== 0o644) touched.push(n);
    }
    t.same(touched, [], 'no host file got the group or a mode');
    t.same((await readdir(host)).sort(), [...names, 'file', 'sub'].sort());
  });
}
