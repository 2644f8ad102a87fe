import { constants, type Stats } from 'node:fs';
import { chmod, chown, lchown, open, readdir, type FileHandle } from 'node:fs/promises';

/** Linux `O_PATH` (not in `fs.constants`): an fd that pins an inode without opening it for I/O. */
const O_PATH = 0o10000000;
const pinFlags = O_PATH | constants.O_NOFOLLOW;

/** The fd's magic link: the kernel resolves it to the very file the fd holds, never by name. */
const fdPath = (fd: number) => `/proc/self/fd/${fd}`;

export interface OwnershipOptions {
  /** Files gain group read only (0440), not read-write (0660). */
  readOnly: boolean;
  /** `OnRootMismatch`: nothing is done when the root already has the group and mode. */
  policy?: string | undefined;
  /** false: the root directory only. */
  recursive?: boolean;
}

/**
 * fsGroup ownership, the kubelet's `SetVolumeOwnership` (pkg/volume/volume_linux.go:
 * `walkDeep`, `changeFilePermission`, `requiresPermissionChange`): every entry's group becomes
 * `fsGroup`; regular files gain group read (and write unless `readOnly`), directories also
 * setgid and search. Symlinks get only their own group (`os.Lchown`) and are never followed;
 * devices, sockets and FIFOs get only their group, are never opened and never chmod'ed. With
 * `OnRootMismatch` nothing is done when the root already has the group and mode.
 *
 * Race-free against a container that renames, swaps (renameat2 RENAME_EXCHANGE) or replaces
 * entries while the walk runs: nothing is ever looked up by a path a container can change.
 * Each entry is pinned by an `O_PATH | O_NOFOLLOW` fd opened as `/proc/self/fd/<dir>/<name>`,
 * where `<dir>` is the parent's own pinned fd, so the name is looked up in that very directory
 * (the kernel jumps through the magic link to the inode held, whatever was renamed since) and
 * a symlink in its place is pinned as the link, never its target. `O_PATH` opens nothing: a
 * FIFO cannot block, a device runs no driver code. The pinned inode is then fstat'ed,
 * chown'ed, chmod'ed and (a directory) read through its own magic link `/proc/self/fd/<fd>`,
 * so a swap after the pin changes nothing either (`fchmod`/`fchown` refuse O_PATH fds with
 * EBADF; chmod(2) and chown(2) on the magic link reach the same inode, as glibc's
 * `fchmodat(AT_SYMLINK_NOFOLLOW)` does). Symlinks and special files get `lchown` of the name in
 * the pinned parent: if a container swaps that name meanwhile, whatever now stands there is an
 * entry of the same directory, and lchown neither follows it nor touches its mode.
 */
export async function setVolumeOwnership(dir: string, fsGroup: number, opts: OwnershipOptions): Promise<void> {
  const fileMask = opts.readOnly ? 0o440 : 0o660;
  const dirMask = fileMask | 0o2110;

  /** Group and mode of a pinned regular file or directory, then (a directory) its entries. */
  const change = async (entry: FileHandle, st: Stats, descend: boolean): Promise<void> => {
    const self = fdPath(entry.fd);
    // The mode is read before the chown, which clears setuid and setgid on files (as upstream).
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
