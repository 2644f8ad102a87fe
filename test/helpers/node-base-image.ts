import { execFile } from 'node:child_process';
import { chmod, cp, lstat, mkdir, mkdtemp, readdir, realpath, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { dockerCLI } from './docker.js';

const run = promisify(execFile);

/**
 * A base image for the Dockerfile's `BASE` argument without a registry: a root filesystem holding
 * this machine's Node.js and npm, a shell (the machine's /bin/sh) with busybox's utilities, and
 * what port-forward runs (util-linux nsenter), each executable with the shared libraries
 * `ldd` names, imported with `docker import`. Tagged by Node version, and made once per engine.
 * Expects a merged-/usr machine (Debian ≥ 12), as CI's.
 */
export async function nodeBaseImage(): Promise<string> {
  const tag = `nodelet.local/node-base:${process.version.slice(1)}`;
  const exists = await dockerCLI('image', 'inspect', '--format', '{{.Id}}', tag).then(() => true, () => false);
  if (exists) return tag;

  const root = await mkdtemp(join(tmpdir(), 'nodelet-node-base-'));
  try {
    for (const d of ['usr/bin', 'usr/lib', 'usr/lib64', 'usr/sbin', 'etc', 'tmp', 'root']) await mkdir(join(root, d), { recursive: true });
    for (const [link, target] of [['bin', 'usr/bin'], ['lib', 'usr/lib'], ['lib64', 'usr/lib64'], ['sbin', 'usr/sbin']] as const) await symlink(target, join(root, link));

    const node = await realpath(process.execPath);
    const npmCli = await realpath(await which('npm'));
    // npm's package directory: …/node_modules/npm/bin/npm-cli.js → …/node_modules/npm.
    const npmDir = dirname(dirname(npmCli));
    if (!npmDir.endsWith('/node_modules/npm')) throw new Error(`unexpected npm layout: ${npmCli}`);
    const binaries: [string, string][] = [
      [node, 'usr/bin/node'],
      [await which('sh'), 'usr/bin/sh'],
      [await which('busybox'), 'usr/bin/busybox'],
      [await which('nsenter'), 'usr/bin/nsenter'],
    ];
    for (const [from, to] of binaries) {
      await cp(await realpath(from), join(root, to));
      await copyLibraries(from, root);
    }
    await cp(npmDir, join(root, 'usr/lib/node_modules/npm'), { recursive: true, verbatimSymlinks: true });
    await symlink('../lib/node_modules/npm/bin/npm-cli.js', join(root, 'usr/bin/npm'));
    await symlink('../lib/node_modules/npm/bin/npx-cli.js', join(root, 'usr/bin/npx'));
    // busybox's applets (cp, mkdir, tar, env…) where nothing else has the name.
    const { stdout } = await run(join(root, 'usr/bin/busybox'), ['--list']);
    const present = new Set(await readdir(join(root, 'usr/bin')));
    for (const applet of stdout.split('\n').filter(Boolean)) {
      if (!present.has(applet)) await symlink('busybox', join(root, 'usr/bin', applet));
    }
    await writeFile(join(root, 'etc/passwd'), 'root:x:0:0:root:/root:/bin/sh\n');
    await writeFile(join(root, 'etc/group'), 'root:x:0:\n');
    await chmod(join(root, 'tmp'), 0o1777);

    const tar = join(root, '..', `${root.split('/').pop() ?? 'rootfs'}.tar`);
    await run('tar', ['-C', root, '-cf', tar, '.']);
    try {
      await dockerCLI('import', '--change', 'ENV PATH=/usr/local/bin:/usr/bin:/bin', '--change', 'CMD ["node"]', tar, tag);
    } finally {
      await rm(tar, { force: true });
    }
    return tag;
  } finally {
    await rm(root, { recursive: true, force: true });
  }
}

async function which(name: string): Promise<string> {
  const { stdout } = await run('sh', ['-c', `command -v ${name}`]).catch(() => ({ stdout: '' }));
  const path = stdout.trim();
  if (!path.startsWith('/')) throw new Error(`${name} is not installed (the image test copies it into its base image)`);
  return path;
}

/** Copies every library `ldd` lists for `binary` to the same path under `root`. */
async function copyLibraries(binary: string, root: string): Promise<void> {
  const { stdout } = await run('ldd', [binary]).catch((err: { stdout?: string }) => ({ stdout: err.stdout ?? '' }));
  for (const m of stdout.matchAll(/(?:=>\s*)?(\/\S+)\s+\(0x/g)) {
    const lib = m[1] ?? '';
    const real = await realpath(lib);
    for (const path of new Set([real, underUsr(lib)])) {
      const dest = join(root, path);
      if (await lstat(dest).then(() => true, () => false)) continue;
      await mkdir(dirname(dest), { recursive: true });
      await cp(real, dest);
    }
  }
}

/** `/lib/x/libc.so.6` → `/usr/lib/x/libc.so.6` on merged /usr (the rootfs's /lib is a link). */
function underUsr(path: string): string {
  const top = path.split('/')[1] ?? '';
  return ['bin', 'lib', 'lib64', 'sbin'].includes(top) ? `/usr${path}` : path;
}
