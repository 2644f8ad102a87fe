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

/** `mount -t tmpfs -o mode=<mode>,size=<bytes> tmpfs <dir>` (nodelet runs as root, as the kubelet does). */
export async function mountTmpfs(dir: string, sizeBytes: bigint, mode: number): Promise<void> {
  const options = [`mode=${mode.toString(8).padStart(4, '0')}`, ...(sizeBytes > 0n ? [`size=${sizeBytes}`] : [])].join(',');
  try {
    await run('mount', ['-t', 'tmpfs', '-o', options, 'tmpfs', dir]);
  } catch (err) {
    throw new Error(`mount -t tmpfs on ${dir} failed: ${((err as { stderr?: string }).stderr ?? (err as Error).message).trim()}`);
  }
}

/** Unmounts everything mounted at or below `root`, deepest first. */
export async function unmountUnder(root: string): Promise<void> {
  const below = (await mountPoints()).filter((m) => m === root || m.startsWith(`${root}/`)).sort((a, b) => b.length - a.length);
  for (const m of below) {
    try {
      await run('umount', [m]);
    } catch {
      // Still busy (a process holds it open): detach it now, the kernel frees it when unused.
      await run('umount', ['-l', m]);
    }
  }
}
