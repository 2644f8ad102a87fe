import t from 'tap';
import { execFileSync } from 'node:child_process';
import { lstat, mkdir, mkdtemp, readdir, readFile, realpath, rename, rm, stat, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { mountPoints } from '../../../src/volumes/host.js';
import { bindSubPath, cleanSubPaths, openWithin, pathComponents, resolveWithin, safeMakeDir, SubPathError, subPathRefusal, subPathTarget, withinBase } from '../../../src/volumes/subpath.js';

const root = process.getuid?.() === 0;

/** A volume directory and, beside it, a "host" directory holding a marker no pod may reach. */
async function dirs(t: { teardown(fn: () => Promise<void>): void }) {
  const top = await realpath(await mkdtemp(join(tmpdir(), 'nodelet-subpath-')));
  t.teardown(async () => {
    for (const m of (await mountPoints()).filter((p) => p.startsWith(`${top}/`)).sort((a, b) => b.length - a.length)) execFileSync('umount', ['-l', m]);
    await rm(top, { recursive: true, force: true });
  });
  const vol = join(top, 'vol');
  const host = join(top, 'host');
  await mkdir(join(vol, 'a', 'b'), { recursive: true });
  await mkdir(host);
  await writeFile(join(host, 'marker'), 'secret');
  return { top, vol, host };
}

const refusedWith = (reason: RegExp) => ({ name: 'SubPathError', reason });

t.test('the pure parts: refusals, components, within-base, targets', async (t) => {
  t.equal(subPathRefusal('/etc'), 'error SubPath `/etc` must not be an absolute path');
  t.equal(subPathRefusal('a/../b'), "unable to provision SubPath `a/../b`: must not contain '..'");
  t.equal(subPathRefusal('a/..b/c'), undefined, 'a name starting with two dots is not a backstep');
  t.equal(subPathRefusal('a/b'), undefined);
  t.same(pathComponents('a//b/./c/'), ['a', 'b', 'c']);
  t.same(pathComponents(''), []);
  t.ok(withinBase('/v', '/v'));
  t.ok(withinBase('/v', '/v/a/..b'));
  t.notOk(withinBase('/v', '/'));
  t.notOk(withinBase('/v', '/vx'));
  t.notOk(withinBase('/v/a', '/v/b'));
  t.equal(subPathTarget('/r/pods/u', 'data', 'app', 2), '/r/pods/u/volume-subpaths/data/app/2');
  t.throws(() => subPathTarget('/r/pods/u', '..', 'app', 0), SubPathError);
  t.throws(() => subPathTarget('/r/pods/u', 'data', 'a/b', 0), SubPathError);
});

t.test('openWithin follows no symlink: last component, middle component, a directory swapped after the check', async (t) => {
  const { vol, host } = await dirs(t);
  const ok = await openWithin(vol, ['a', 'b'], 'a/b');
  t.equal(ok.stats.ino, (await stat(join(vol, 'a', 'b'))).ino, 'opens the directory in the volume');
  t.ok(ok.stats.isDirectory());
  await ok.handle.close();

  await symlink(host, join(vol, 'last'));
  await t.rejects(openWithin(vol, ['last'], 'last'), refusedWith(/^subpath "last": unexpected symlink found$/), 'a symlink as the last component');
  await symlink(host, join(vol, 'a', 'mid'));
  await t.rejects(openWithin(vol, ['a', 'mid', 'marker'], 'a/mid/marker'), refusedWith(/unexpected symlink found/), 'a symlink as a middle component');
  await writeFile(join(vol, 'file'), 'x');
  await t.rejects(openWithin(vol, ['file', 'x'], 'file/x'), refusedWith(/cannot be opened|not a directory/), 'a file as a middle component');

  // The attack: the path is checked (resolved inside the volume), then a directory is swapped
  // for a symlink to the host before it is opened.
  const last = await resolveWithin(vol, 'a/b');
  t.same(last, ['a', 'b']);
  await rename(join(vol, 'a', 'b'), join(vol, 'a', 'b-old'));
  await symlink(host, join(vol, 'a', 'b'));
  await t.rejects(openWithin(vol, last, 'a/b'), refusedWith(/unexpected symlink found/), 'the last directory swapped after the check');

  await mkdir(join(vol, 'c', 'd'), { recursive: true });
  const middle = await resolveWithin(vol, 'c/d');
  await rename(join(vol, 'c'), join(vol, 'c-old'));
  await symlink(join(host, '..', 'vol', 'c-old'), join(vol, 'c'));
  await t.rejects(openWithin(vol, middle, 'c/d'), refusedWith(/unexpected symlink found/), 'a middle directory swapped after the check, even for a symlink back into the volume');

  // Only the resolution may see a symlink, and it refuses one leaving the volume.
  await t.rejects(resolveWithin(vol, 'last'), refusedWith(/^subpath "last" not within volume path$/));
  await t.rejects(resolveWithin(vol, 'nope'), refusedWith(/^subpath "nope" does not exist$/));
  await symlink('a', join(vol, 'inside-link'));
  t.same(await resolveWithin(vol, 'inside-link/b-old'), ['a', 'b-old'], 'a symlink that stays in the volume resolves, as the kubelet EvalSymlinks does');
});

t.test('openWithin opens a FIFO without blocking (O_PATH)', async (t) => {
  const { vol } = await dirs(t);
  execFileSync('mkfifo', [join(vol, 'fifo')]);
  const opened = await openWithin(vol, ['fifo'], 'fifo');
  t.ok(opened.stats.isFIFO());
  await opened.handle.close();
});

t.test('safeMakeDir creates inside the volume only, with the mode asked', async (t) => {
  const { vol, host } = await dirs(t);
  await safeMakeDir(vol, 'a/b/new/deeper', 0o2775);
  for (const p of ['a/b/new', 'a/b/new/deeper']) t.equal((await stat(join(vol, p))).mode & 0o7777, 0o2775, `${p}: the mode exactly, despite the umask`);
  t.equal((await stat(join(vol, 'a'))).mode & 0o7777, 0o755, 'existing directories keep theirs');
  await safeMakeDir(vol, 'a/b', 0o700);
  t.equal((await stat(join(vol, 'a', 'b'))).mode & 0o7777, 0o755, 'nothing to create: nothing changed');

  await symlink(host, join(vol, 'to-host'));
  await t.rejects(safeMakeDir(vol, 'to-host/made', 0o777), refusedWith(/^subpath "to-host\/made" not within volume path$/), 'through a symlink to a host directory');
  const missing = join(host, 'missing');
  await symlink(missing, join(vol, 'dangling'));
  await t.rejects(safeMakeDir(vol, 'dangling', 0o777), refusedWith(/unexpected symlink found/), 'a dangling symlink as the last component');
  await t.rejects(safeMakeDir(vol, 'dangling/made', 0o777), refusedWith(/unexpected symlink found/), 'a dangling symlink as a middle component');
  await symlink(join(missing, 'x'), join(vol, 'a', 'deep-dangling'));
  await t.rejects(safeMakeDir(vol, 'a/deep-dangling/y/z', 0o777), refusedWith(/unexpected symlink found/));
  t.same(await readdir(host), ['marker'], 'nothing was created outside the volume');
  t.notOk(await lstat(missing).catch(() => undefined));
  await writeFile(join(vol, 'a', 'file'), '');
  await t.rejects(safeMakeDir(vol, 'a/file/x', 0o777), SubPathError, 'a file in the way');
});

t.test('bindSubPath mounts the opened file on a stable target, reuses it, and cleanSubPaths removes it', { skip: !root && 'needs root (mount)' }, async (t) => {
  const { top, vol, host } = await dirs(t);
  const podDir = join(top, 'pod');
  await mkdir(podDir);
  await writeFile(join(vol, 'a', 'b', 'inside'), 'in');
  await writeFile(join(vol, 'conf'), 'conf');
  const sp = { volumePath: vol, podDir, volumeName: 'data', containerName: 'app' };
  const target = await bindSubPath({ ...sp, subPath: 'a/b', mountIndex: 0 });
  t.equal(target, join(podDir, 'volume-subpaths', 'data', 'app', '0'));
  t.equal(await readFile(join(target, 'inside'), 'utf8'), 'in', 'the subPath directory is bound on the target');
  const fileTarget = await bindSubPath({ ...sp, subPath: 'conf', mountIndex: 1 });
  t.ok((await lstat(fileTarget)).isFile(), 'a file target for a file');
  t.equal(await readFile(fileTarget, 'utf8'), 'conf');

  const count = async (p: string) => (await mountPoints()).filter((m) => m === p).length;
  t.equal(await bindSubPath({ ...sp, subPath: 'a/b', mountIndex: 0 }), target, 'a later start reuses the target');
  t.equal(await count(target), 1, 'mounted once');

  // The attacker swaps the directory for a symlink to the host: the next start is refused and
  // the existing mount still shows the directory that was opened, never the host's.
  await rename(join(vol, 'a', 'b'), join(vol, 'a', 'b-old'));
  await symlink(host, join(vol, 'a', 'b'));
  await t.rejects(bindSubPath({ ...sp, subPath: 'a/b', mountIndex: 0 }), refusedWith(/not within volume path/));
  t.same(await readdir(target), ['inside']);

  // Another subPath for the same mount index replaces the mount.
  await mkdir(join(vol, 'other'));
  t.equal(await bindSubPath({ ...sp, subPath: 'other', mountIndex: 0 }), target);
  t.same(await readdir(target), [], 'remounted with the new directory');
  t.equal(await count(target), 1, 'the old mount was taken off');
  // A file subPath on a target that was a directory.
  t.equal(await bindSubPath({ ...sp, subPath: 'conf', mountIndex: 0 }), target);
  t.equal(await readFile(target, 'utf8'), 'conf');

  await cleanSubPaths(podDir);
  t.notOk((await mountPoints()).some((m) => m.startsWith(`${podDir}/`)), 'every target unmounted');
  t.same(await readdir(podDir), [], 'volume-subpaths removed');
  t.equal(await readFile(join(vol, 'conf'), 'utf8'), 'conf', 'the volume is untouched');
  t.same(await readdir(join(vol, 'a', 'b-old')), ['inside']);
  await cleanSubPaths(podDir);
  t.pass('cleaning twice is fine');
});
