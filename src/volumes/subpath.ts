import { constants, type Stats } from 'node:fs';
import { chmod, lstat, mkdir, open, readdir, realpath, rmdir, unlink, type FileHandle } from 'node:fs/promises';
import { dirname, isAbsolute, join, relative, sep } from 'node:path';
import { bindMount, isMountPoint, unmount } from './host.js';
import { O_PATH, fdPath } from './proc-fd.js';

/**
 * Race-free subPath mounts (CVE-2021-25741, kubernetes/kubernetes#104980), after the kubelet's
 * pkg/volume/util/subpath/subpath_linux.go (`doSafeMakeDir`, `doSafeOpen`, `doBindSubPath`,
 * `prepareSubpathTarget`, `doCleanSubPaths`).
 *
 * The threat: a volume is writable by the pod's containers while nodelet, as root on the host,
 * resolves `<volume>/<subPath>`. Any check on a path string (realpath, lstat) is stale by the
 * time Docker (runc) mounts that string: another container of the pod can swap a directory for a
 * symlink to any host path in between. So nodelet never hands Docker a path inside a volume.
 * It opens the subPath itself, one component at a time from the volume root, refusing symlinks;
 * bind-mounts the open file (`/proc/<pid>/fd/<fd>`, which names the opened object, not a path)
 * onto a target under `<root-dir>/pods/<uid>/volume-subpaths/` that no container can reach; and
 * hands Docker that target.
 *
 * Why opening `/proc/self/fd/<parent>/<name>` is race-free (Node has no `openat`): the kernel
 * resolves `/proc/self/fd/<parent>` as a magic link — it jumps to the very dentry and mount the
 * already-open `<parent>` refers to (nd_jump_link), not to a path string, so renaming or
 * replacing anything above it changes nothing. `<name>` is then looked up in that directory,
 * exactly as `openat(parent, name)` would: it is one component (never empty, `.`, `..` or
 * containing `/`), so the only symlink that could be met is `<name>` itself, and `O_NOFOLLOW`
 * keeps the kernel from following it (with `O_PATH` the open returns the symlink itself, which
 * `fstat` reports and we refuse). Each opened directory becomes the next parent, so every step
 * is anchored to an object verified before, never re-resolved. `O_PATH` (the kubelet's
 * `openFDFlags`) opens without reading: a FIFO or device planted in place cannot block or act.
 * What can still change is harmless: a directory swapped for another directory of the volume,
 * or for a file, mounts something the pod could already reach. The mount source
 * `/proc/<nodelet pid>/fd/<fd>` is likewise a magic link to the open file; `mount
 * --no-canonicalize` passes it to the kernel unresolved.
 */

/** The kubelet's `containerSubPathDirectoryName`: `<pod dir>/volume-subpaths/<volume>/<container>/<mount index>`. */
export const subPathDirName = 'volume-subpaths';

/** The kubelet's `openFDFlags` (libuv adds `O_CLOEXEC` to every open). */
const openFDFlags = O_PATH | constants.O_NOFOLLOW;

/**
 * A subPath nodelet will not mount or create. `reason` is what the pod's owner may read (only the
 * subPath they gave, never a host path, as the kubelet keeps host details out of the status);
 * `message` has the host detail, for nodelet's log.
 */
export class SubPathError extends Error {
  readonly reason: string;

  constructor(reason: string, detail: string) {
    super(detail);
    this.name = 'SubPathError';
    this.reason = reason;
  }
}

/** The kubelet's refusals in `makeMounts` (pkg/kubelet/kubelet_pods.go), before anything is touched. */
export function subPathRefusal(subPath: string): string | undefined {
  if (isAbsolute(subPath)) return `error SubPath \`${subPath}\` must not be an absolute path`;
  if (subPath.split('/').includes('..')) return `unable to provision SubPath \`${subPath}\`: must not contain '..'`;
  return undefined;
}

/** The components of a relative path, without empty and `.` ones. */
export function pathComponents(rel: string): string[] {
  return rel.split('/').filter((c) => c !== '' && c !== '.');
}

/** `mount.PathWithinBase`: `path` is `base` or below it (both cleaned, absolute). */
export function withinBase(base: string, path: string): boolean {
  const rel = relative(base, path);
  return rel === '' || (!isAbsolute(rel) && rel !== '..' && !rel.startsWith(`..${sep}`));
}

const safeName = /^[A-Za-z0-9][A-Za-z0-9._-]*$/;

/** `getSubpathBindTarget`: where the subPath of mount `index` of `container` is bind-mounted. */
export function subPathTarget(podDir: string, volumeName: string, containerName: string, index: number): string {
  for (const name of [volumeName, containerName]) if (!safeName.test(name)) throw new SubPathError(`${JSON.stringify(name)} cannot name a directory`, `${JSON.stringify(name)} cannot name a directory`);
  if (!Number.isInteger(index) || index < 0) throw new Error(`bad volume mount index ${index}`);
  return join(podDir, subPathDirName, volumeName, containerName, String(index));
}

const q = JSON.stringify;
const code = (err: unknown) => (err as NodeJS.ErrnoException).code;
const sameFile = (a: Stats, b: Stats) => a.dev === b.dev && a.ino === b.ino;

/**
 * The components of `<base>/<subPath>` relative to `base` with symlinks resolved (`doBindSubPath`'s
 * `EvalSymlinks`), refused when they leave the volume. Racy by nature — a hint for `openWithin`,
 * which is what makes the result safe. `base` must already be resolved.
 */
export async function resolveWithin(base: string, subPath: string): Promise<string[]> {
  let resolved: string;
  try {
    resolved = await realpath(join(base, subPath));
  } catch (err) {
    const missing = code(err) === 'ENOENT';
    throw new SubPathError(missing ? `subpath ${q(subPath)} does not exist` : `subpath ${q(subPath)} cannot be resolved`, `error resolving symlinks in ${q(join(base, subPath))}: ${(err as Error).message}`);
  }
  if (!withinBase(base, resolved)) throw new SubPathError(`subpath ${q(subPath)} not within volume path`, `subpath ${q(resolved)} not within volume path ${q(base)}`);
  return pathComponents(relative(base, resolved));
}

export interface OpenedPath {
  /** An `O_PATH` descriptor; the caller closes it. */
  readonly handle: FileHandle;
  readonly stats: Stats;
}

/**
 * `doSafeOpen`: opens `base`, then each of `components` relative to the one before with
 * `O_PATH|O_NOFOLLOW` through `/proc/self/fd/<parent>/<name>` (race-free: see the top of this
 * file). Every component but the last must be a directory; none may be a symlink.
 */
export async function openWithin(base: string, components: readonly string[], subPath: string): Promise<OpenedPath> {
  let current = await open(base, openFDFlags | constants.O_DIRECTORY).catch((err: unknown) => {
    throw new SubPathError('the volume cannot be opened', `cannot open directory ${q(base)}: ${(err as Error).message}`);
  });
  try {
    let stats = await current.stat();
    let path = base;
    for (const [i, name] of components.entries()) {
      if (name === '' || name === '.' || name === '..' || name.includes('/')) throw new Error(`bad path component ${q(name)}`);
      path = join(path, name);
      const next = await open(fdPath(current.fd, name), openFDFlags).catch((err: unknown) => {
        throw new SubPathError(`subpath ${q(subPath)} cannot be opened`, `cannot open ${q(path)}: ${(err as Error).message}`);
      });
      await current.close();
      current = next;
      stats = await current.stat();
      if (stats.isSymbolicLink()) throw new SubPathError(`subpath ${q(subPath)}: unexpected symlink found`, `unexpected symlink found ${q(path)}`);
      if (i < components.length - 1 && !stats.isDirectory()) throw new SubPathError(`subpath ${q(subPath)}: not a directory`, `${q(path)} is not a directory`);
    }
    return { handle: current, stats };
  } catch (err) {
    await current.close().catch(() => undefined);
    throw err;
  }
}

/**
 * `doSafeMakeDir`: creates the missing directories of `<base>/<subPath>` with `mode` (the kubelet
 * passes the volume root's mode). The existing prefix is found with symlinks resolved and must be
 * in the volume; it is opened with `openWithin`, then each missing directory is made with
 * `mkdir("/proc/self/fd/<parent>/<name>")` — mkdir never follows a symlink in its last
 * component (a planted one, even dangling, is EEXIST) — and opened `O_NOFOLLOW` to become the
 * next parent, so nothing is ever created outside the volume. A directory this call created gets
 * `mode` exactly (mkdir's was narrowed by the umask), chmod-ed through its descriptor.
 */
export async function safeMakeDir(base: string, subPath: string, mode: number): Promise<void> {
  const names = pathComponents(subPath);
  let existing = 0;
  let resolved = base;
  for (; existing < names.length; existing++) {
    try {
      resolved = await realpath(join(base, ...names.slice(0, existing + 1)));
    } catch (err) {
      if (code(err) === 'ENOENT') break;
      throw new SubPathError(`subpath ${q(subPath)} cannot be resolved`, `error opening directory ${q(join(base, subPath))}: ${(err as Error).message}`);
    }
  }
  // All there: the bind step checks whatever it is.
  if (existing === names.length) return;
  if (!withinBase(base, resolved)) throw new SubPathError(`subpath ${q(subPath)} not within volume path`, `path ${q(resolved)} is outside of allowed base ${q(base)}`);
  const opened = await openWithin(base, pathComponents(relative(base, resolved)), subPath);
  let parent = opened.handle;
  try {
    if (!opened.stats.isDirectory()) throw new SubPathError(`subpath ${q(subPath)}: not a directory`, `${q(resolved)} is not a directory`);
    let path = resolved;
    for (const name of names.slice(existing)) {
      path = join(path, name);
      const at = fdPath(parent.fd, name);
      let created: boolean;
      try {
        await mkdir(at, mode);
        created = true;
      } catch (err) {
        if (code(err) !== 'EEXIST') throw new SubPathError(`subpath ${q(subPath)} cannot be created`, `cannot create directory ${q(path)}: ${(err as Error).message}`);
        created = false; // made meanwhile (by a container, say): checked below like any other
      }
      const next = await open(at, openFDFlags).catch((err: unknown) => {
        throw new SubPathError(`subpath ${q(subPath)} cannot be opened`, `cannot open ${q(path)}: ${(err as Error).message}`);
      });
      await parent.close();
      parent = next;
      const st = await parent.stat();
      if (st.isSymbolicLink()) throw new SubPathError(`subpath ${q(subPath)}: unexpected symlink found`, `unexpected symlink found ${q(path)}`);
      if (!st.isDirectory()) throw new SubPathError(`subpath ${q(subPath)}: not a directory`, `${q(path)} is not a directory`);
      // chmod follows the magic link to the directory the descriptor holds, not a path.
      if (created) await chmod(fdPath(parent.fd), mode);
    }
  } finally {
    await parent.close().catch(() => undefined);
  }
}

export interface SubPath {
  /** The volume's host directory (trusted: nodelet's own, or a hostPath the pod's author named). */
  readonly volumePath: string;
  /** As the user gave it (after `subPathRefusal`). */
  readonly subPath: string;
  /** `<root-dir>/pods/<uid>`, existing. */
  readonly podDir: string;
  readonly volumeName: string;
  readonly containerName: string;
  /** The mount's index in the container's `volumeMounts`. */
  readonly mountIndex: number;
}

/**
 * `doBindSubPath`: opens the subPath safely and bind-mounts the open file onto its stable target
 * (a directory or an empty file, to match), returning the target for Docker to bind. A target
 * already mounted with the same file (a restarted container) is reused; one mounted with
 * anything else is unmounted first (`prepareSubpathTarget`). The descriptor is closed before
 * returning: the mount holds the file from then on.
 */
export async function bindSubPath(sp: SubPath): Promise<string> {
  const base = await realpath(sp.volumePath).catch((err: unknown) => {
    throw new SubPathError('the volume cannot be resolved', `error resolving symlinks in ${q(sp.volumePath)}: ${(err as Error).message}`);
  });
  const podDir = await realpath(sp.podDir);
  const target = subPathTarget(podDir, sp.volumeName, sp.containerName, sp.mountIndex);
  const opened = await openWithin(base, await resolveWithin(base, sp.subPath), sp.subPath);
  try {
    if (await prepareSubPathTarget(target, opened.stats)) return target;
    await bindMount(`/proc/${process.pid}/fd/${opened.handle.fd}`, target);
    const mounted = await lstat(target);
    if (!sameFile(mounted, opened.stats)) {
      await unmount(target);
      throw new Error(`${q(target)} does not show the opened subpath after mounting it`);
    }
    return target;
  } finally {
    await opened.handle.close().catch(() => undefined);
  }
}

/** How many stacked mounts one target may need taking off before we give up. */
const maxUnmounts = 8;

/** `prepareSubpathTarget`: true when `target` already shows `stats`' file; otherwise leaves an unmounted target of the right type. */
async function prepareSubPathTarget(target: string, stats: Stats): Promise<boolean> {
  for (let n = 0; await isMountPoint(target); n++) {
    const st = await lstat(target).catch(() => undefined);
    if (st && sameFile(st, stats)) return true;
    if (n >= maxUnmounts) throw new Error(`cannot unmount ${q(target)}`);
    await unmount(target);
  }
  await mkdir(dirname(target), { recursive: true, mode: 0o750 });
  const dir = stats.isDirectory();
  const st = await lstat(target).catch(() => undefined);
  if (st && (dir ? st.isDirectory() : st.isFile())) return false;
  if (st) await (st.isDirectory() ? rmdir(target) : unlink(target)); // the file became a directory or back: never recursive
  if (dir) await mkdir(target, 0o750);
  // A file is enough for every non-directory (the bind mount gives the target its type).
  else await (await open(target, constants.O_CREAT | constants.O_EXCL | constants.O_WRONLY | constants.O_NOFOLLOW, 0o640)).close();
  return false;
}

/**
 * `doCleanSubPaths` for every volume of a pod: unmounts each target under
 * `<podDir>/volume-subpaths` and removes the tree. Nothing here is recursive: a level is entered
 * only once it is no longer a mount point, and each target — the only place a volume's (or a
 * hostPath's) files show — is removed with rmdir or unlink, which refuse (EBUSY, ENOTEMPTY)
 * rather than reach into anything still mounted. Throws when something stays, so the caller
 * never runs `rm -r` over it.
 */
export async function cleanSubPaths(podDir: string): Promise<void> {
  await clean(join(podDir, subPathDirName), 0);
}

/** depth 0: volume-subpaths, 1: <volume>, 2: <container>, 3: <mount index> (a target). */
async function clean(path: string, depth: number): Promise<void> {
  for (let n = 0; await isMountPoint(path); n++) {
    if (n >= maxUnmounts) throw new Error(`cannot unmount ${q(path)}`);
    await unmount(path);
  }
  const st = await lstat(path).catch((err: unknown) => {
    if (code(err) === 'ENOENT') return undefined;
    throw err;
  });
  if (!st) return;
  if (!st.isDirectory()) return unlink(path);
  if (depth < 3) for (const name of await readdir(path)) await clean(join(path, name), depth + 1);
  await rmdir(path);
}
