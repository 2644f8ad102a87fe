import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** Mount points listed in /proc/self/mounts (octal escapes such as `\040` decoded). */
export async function mountPoints(): Promise<string[]> {
  const text = await readFile('/proc/self/mounts', 'utf8');
  return text
    .split('\n')
    .filter(Boolean)
    .map((line) => (line.split(' ')[1] ?? '').replace(/\\([0-7]{3})/g, (_, o: string) => String.fromCharCode(parseInt(o, 8))));
}

export async function isMountPoint(dir: string): Promise<boolean> {
  return (await mountPoints()).includes(dir);
}

/**
 * `mount -t tmpfs [-o mode=<mode>,size=<bytes>] tmpfs <dir>` (nodelet runs as root, as the kubelet
 * does). Without `mode` the root of the tmpfs keeps the kernel's default, 1777 (sticky), as the
 * kubelet's emptyDir `setupTmpfs` mounts it (pkg/volume/emptydir/empty_dir.go: no mode option).
 */
export async function mountTmpfs(dir: string, sizeBytes: bigint, mode?: number): Promise<void> {
  const options = [...(mode !== undefined ? [`mode=${mode.toString(8).padStart(4, '0')}`] : []), ...(sizeBytes > 0n ? [`size=${sizeBytes}`] : [])];
  try {
    await run('mount', ['-t', 'tmpfs', ...(options.length ? ['-o', options.join(',')] : []), 'tmpfs', dir]);
  } catch (err) {
    throw new Error(`mount -t tmpfs on ${dir} failed: ${((err as { stderr?: string }).stderr ?? (err as Error).message).trim()}`);
  }
}

/** Mount points at or below `root` (as /proc/self/mounts spells them), deepest first. */
export async function mountsUnder(root: string): Promise<string[]> {
  return (await mountPoints()).filter((m) => m === root || m.startsWith(`${root}/`)).sort((a, b) => b.length - a.length);
}

/** Unmounts everything mounted at or below `root`, deepest first. */
export async function unmountUnder(root: string): Promise<void> {
  for (const m of await mountsUnder(root)) await unmount(m);
}

/** `umount <target>`; a target still busy (a process holds it open) is detached now (`umount -l`) and freed by the kernel when unused. */
export async function unmount(target: string): Promise<void> {
  try {
    await run('umount', [target]);
  } catch {
    await run('umount', ['-l', target]);
  }
}

/**
 * `mount --no-canonicalize --bind <source> <target>`. `--no-canonicalize` hands `source` to the
 * kernel as given: mount(8) would otherwise resolve it to a path string first, and a subPath
 * source (`/proc/<pid>/fd/<fd>`) must reach the kernel as the magic link to an open file.
 */
export async function bindMount(source: string, target: string): Promise<void> {
  try {
    await run('mount', ['--no-canonicalize', '--bind', source, target]);
  } catch (err) {
    throw new Error(`mount --bind ${source} ${target} failed: ${((err as { stderr?: string }).stderr ?? (err as Error).message).trim()}`);
  }
}
