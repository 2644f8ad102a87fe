import { lstat, opendir } from 'node:fs/promises';
import { join } from 'node:path';

/** What a directory tree holds on disk: allocated bytes and inodes. */
export interface DiskUsage {
  readonly bytes: bigint;
  readonly inodes: bigint;
}

/** The most entries one walk visits: a pod cannot make nodelet walk without bound. */
export const DISK_USAGE_ENTRY_CAP = 1_000_000;

/**
 * The kubelet's `fs.DiskUsage` (pkg/volume/util/fs/fs.go): a walk of `root` that stays on its
 * filesystem, summing each inode's allocated blocks (`st_blocks` × 512, as `du` does, so sparse
 * files count what they take) and counting distinct inodes (hard links once). A missing root is
 * zero; entries that vanish during the walk are skipped. At `cap` entries the walk stops and the
 * figures so far are returned (a lower bound), with `truncated` set.
 */
export async function diskUsage(root: string, cap = DISK_USAGE_ENTRY_CAP): Promise<DiskUsage & { readonly truncated: boolean }> {
  let top;
  try {
    top = await lstat(root, { bigint: true });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return { bytes: 0n, inodes: 0n, truncated: false };
    throw err;
  }
  const seen = new Set<bigint>([top.ino]);
  let bytes = top.blocks * 512n;
  let visited = 1;
  const dirs = top.isDirectory() ? [root] : [];
  while (dirs.length > 0) {
    const dir = dirs.pop() as string;
    let handle;
    try {
      handle = await opendir(dir);
    } catch {
      continue;
    }
    for await (const entry of handle) {
      if (visited >= cap) return { bytes, inodes: BigInt(seen.size), truncated: true };
      visited++;
      const path = join(dir, entry.name);
      const st = await lstat(path, { bigint: true }).catch(() => undefined);
      if (!st || st.dev !== top.dev || seen.has(st.ino)) continue;
      seen.add(st.ino);
      bytes += st.blocks * 512n;
      if (st.isDirectory()) dirs.push(path);
    }
  }
  return { bytes, inodes: BigInt(seen.size), truncated: false };
}
