import { constants, type Stats } from 'node:fs';
import { chmod, chown, lchown, open, readdir, type FileHandle } from 'node:fs/promises';
import { O_PATH, fdPath } from './proc-fd.js';

const pinFlags = O_PATH | constants.O_NOFOLLOW;

export interface OwnershipOptions {
  /** Files gain group read only (0440), not read-write (0660). */
  readOnly: boolean;
  /** `OnRootMismatch`: nothing is done when the root already has the group and mode. */
  policy?: string | undefined;
  /** false: the root directory only. */
  recursive?: boolean;
}

/**
 * fsGroup ownership, the kubelet's `SetVolumeOwnership` (pkg/volume/volume_linux.go: `walkDeep`,
 * `changeFilePermission`, `requiresPermissionChange`): every entry's group becomes `fsGroup`;
 * regular files gain group read (and write unless `readOnly`), directories also setgid and
 * search. Symlinks get only their own group (`os.Lchown`), never followed; devices, sockets and
 * FIFOs get only their group, never opened, never chmod'ed. With `OnRootMismatch` nothing is done
 * when the root already has the group and mode. Callers apply it to directories no container has
 * written into yet (a new emptyDir, the atomic writer's new directory); it stays safe on others.
 *
 * Race-free against a container renaming, exchanging (renameat2 RENAME_EXCHANGE) or replacing
 * entries meanwhile, because no path it can change is ever resolved again:
 * - each entry is pinned by an `O_PATH | O_NOFOLLOW` fd opened as `/proc/self/fd/<parent>/<name>`,
 *   `<parent>` being the parent's pinned fd: the kernel resolves that magic link to the very
 *   directory held, so `<name>` is looked up there whatever was renamed since, and a symlink
 *   standing there is pinned as the link itself. `O_PATH` opens nothing: no FIFO blocks, no
 *   device driver runs;
 * - the pinned inode is fstat'ed through its fd and chown'ed, chmod'ed and read (a directory)
 *   through its own magic link `/proc/self/fd/<fd>`, which reaches that inode and no other
 *   (`fchown`/`fchmod` refuse O_PATH fds with EBADF; glibc's `fchmodat(AT_SYMLINK_NOFOLLOW)`
 *   uses the same magic link);
 * - symlinks and special files get `lchown` of the name in the pinned parent: if it was swapped
 *   meanwhile, what stands there now is an entry of that same directory, and lchown neither
 *   follows it nor changes its mode.
 */
export async function setVolumeOwnership(dir: string, fsGroup: number, opts: OwnershipOptions): Promise<void> {
  const fileMask = opts.readOnly ? 0o440 : 0o660;
  const dirMask = fileMask | 0o2110;

  /** Group and mode of a pinned regular file or directory, then (a directory) its entries. */
  const change = async (entry: FileHandle, st: Stats, descend: boolean): Promise<void> => {
    const self = fdPath(entry.fd);
    // The mode is the one fstat'ed before the chown (which clears setuid and setgid), as upstream.
    await chown(self, -1, fsGroup);
    await chmod(self, (st.mode & 0o7777) | (st.isDirectory() ? dirMask : fileMask));
    if (!st.isDirectory() || !descend) return;
    const parent = Buffer.from(`${self}/`);
    for (const name of await readdir(self, { encoding: 'buffer' })) {
      const at = Buffer.concat([parent, name]);
      let child: FileHandle;
      try {
        child = await open(at, pinFlags);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === 'ENOENT') continue; // removed meanwhile
        throw err;
      }
      try {
        const cst = await child.stat();
        if (cst.isDirectory() || cst.isFile()) await change(child, cst, true);
        else await lchown(at, -1, fsGroup).catch(ignoreGone);
      } finally {
        await child.close();
      }
    }
  };

  const root = await open(dir, pinFlags | constants.O_DIRECTORY);
  try {
    const st = await root.stat();
    if (opts.policy === 'OnRootMismatch' && st.gid === fsGroup && (st.mode & dirMask) === dirMask) return;
    await change(root, st, opts.recursive !== false);
  } finally {
    await root.close();
  }
}

function ignoreGone(err: NodeJS.ErrnoException): void {
  if (err.code !== 'ENOENT') throw err;
}
