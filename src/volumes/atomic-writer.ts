import { chmod, chown, lstat, mkdir, mkdtemp, readdir, readFile, readlink, rename, rm, symlink, unlink, writeFile } from 'node:fs/promises';
import { dirname, join, posix } from 'node:path';

/** One file of a volume: contents, permission bits, and an owner when it must not be root. */
export interface FileProjection {
  readonly data: Buffer | string;
  readonly mode: number;
  readonly fsUser?: number;
}

/** Relative path → file. */
export type Payload = ReadonlyMap<string, FileProjection>;

const dataDirName = '..data';
const newDataDirName = '..data_tmp';

/**
 * The kubelet's payload path rules (`validatePath`): relative, no `..` element, not starting
 * with `..`, at most 4096 bytes, each element at most 255.
 */
export function validatePayloadPath(path: string): string | undefined {
  if (path === '') return 'invalid path: must not be empty';
  if (Buffer.byteLength(path) > 4096) return `invalid path: must be less than or equal to 4096 characters`;
  if (posix.isAbsolute(path)) return `invalid path: must be relative path: ${path}`;
  const parts = path.split('/');
  if (parts.some((p) => Buffer.byteLength(p) > 255)) return `invalid path: each path element must be less than or equal to 255 characters`;
  if (parts.includes('..')) return `invalid path: must not contain '..': ${path}`;
  if (path.startsWith('..')) return `invalid path: must not start with '..': ${path}`;
  return undefined;
}

/** `..2026_01_31_23_59_59.` – the kubelet's timestamped directory prefix (UTC). */
export function timestampPrefix(now: Date): string {
  const p = (n: number) => String(n).padStart(2, '0');
  return `..${now.getUTCFullYear()}_${p(now.getUTCMonth() + 1)}_${p(now.getUTCDate())}_${p(now.getUTCHours())}_${p(now.getUTCMinutes())}_${p(now.getUTCSeconds())}.`;
}

/**
 * Writes `payload` into `dir` the way the kubelet's AtomicWriter does, so a reader never sees a
 * half-updated set:
 *
 *     dir/..2026_01_31_23_59_59.ab12cd/key   the files, in a fresh timestamped directory
 *     dir/..data -> ..2026_01_31_23_59_59.ab12cd   swapped in one rename(2)
 *     dir/key -> ..data/key                  user-visible entries (top-level names only)
 *
 * Unchanged payloads (same paths and bytes) are not rewritten. Entries of an earlier
 * payload that are gone are removed after the swap, then the old directory. `setPerms` runs on
 * the new directory before the swap (fsGroup ownership). Returns whether anything was written.
 */
export async function writeAtomically(dir: string, payload: Payload, opts: { now?: Date; setPerms?: (tsDir: string) => Promise<void> } = {}): Promise<boolean> {
  for (const [path, file] of payload) {
    const problem = validatePayloadPath(path);
    if (problem) throw new Error(problem);
    // Permission bits only: validation allows 0 to 0777 (`fileModeErrorMsg`), and a setuid,
    // setgid or sticky bit from a mode that slipped past it is refused here, never written.
    if (!Number.isInteger(file.mode) || file.mode < 0 || file.mode > 0o777) throw new Error(`invalid mode ${String(file.mode)} for ${path}: must be a number between 0 and 0777 (octal), both inclusive`);
  }
  await mkdir(dir, { recursive: true });
  const oldTsName = await readlink(join(dir, dataDirName)).catch((err: NodeJS.ErrnoException) => {
    if (err.code === 'ENOENT' || err.code === 'EINVAL') return undefined;
    throw err;
  });
  const oldTsDir = oldTsName ? join(dir, oldTsName) : undefined;
  const oldPaths = oldTsDir ? await filesUnder(oldTsDir) : new Set<string>();
  const newTop = new Set([...payload.keys()].map(topLevel));
  const removed = new Set([...oldPaths].map(topLevel).filter((p) => !newTop.has(p)));

  if (oldTsDir && (await samePayload(oldTsDir, oldPaths, payload)) && (await linksComplete(dir, newTop))) return false;

  const tsDir = await mkdtemp(join(dir, timestampPrefix(opts.now ?? new Date())));
  for (const [path, file] of payload) {
    const target = join(tsDir, path);
    await mkdir(dirname(target), { recursive: true, mode: 0o755 });
    await writeFile(target, file.data, { mode: file.mode });
    // The umask narrowed the mode on creation; set it exactly.
    await chmod(target, file.mode);
    if (file.fsUser !== undefined) await chown(target, file.fsUser, -1);
  }
  // mkdtemp creates 0700; readers in containers run as any user.
  await chmod(tsDir, 0o755);
  await opts.setPerms?.(tsDir);

  const tmpLink = join(dir, newDataDirName);
  await rm(tmpLink, { force: true });
  await symlink(posix.basename(tsDir), tmpLink);
  await rename(tmpLink, join(dir, dataDirName));

  for (const name of newTop) {
    const link = join(dir, name);
    const st = await lstat(link).catch(() => undefined);
    if (st?.isSymbolicLink() && (await readlink(link)) === posix.join(dataDirName, name)) continue;
    if (st) await rm(link, { recursive: true, force: true });
    await symlink(posix.join(dataDirName, name), link);
  }
  for (const name of removed) await unlink(join(dir, name)).catch(() => undefined);
  if (oldTsDir) await rm(oldTsDir, { recursive: true, force: true });
  return true;
}

const topLevel = (path: string) => path.split('/')[0] ?? path;

/** Relative paths of the regular files under `root`. */
async function filesUnder(root: string): Promise<Set<string>> {
  const out = new Set<string>();
  const walk = async (rel: string): Promise<void> => {
    const entries = await readdir(join(root, rel), { withFileTypes: true }).catch(() => []);
    for (const e of entries) {
      const path = rel ? `${rel}/${e.name}` : e.name;
      if (e.isDirectory()) await walk(path);
      else out.add(path);
    }
  };
  await walk('');
  return out;
}

async function samePayload(tsDir: string, oldPaths: ReadonlySet<string>, payload: Payload): Promise<boolean> {
  if (oldPaths.size !== payload.size) return false;
  for (const [path, file] of payload) {
    if (!oldPaths.has(path)) return false;
    const target = join(tsDir, path);
    // Contents only, as the kubelet's shouldWriteFile: fsGroup ownership changes the modes.
    const bytes = await readFile(target).catch(() => undefined);
    if (!bytes?.equals(Buffer.from(file.data))) return false;
  }
  return true;
}

async function linksComplete(dir: string, names: ReadonlySet<string>): Promise<boolean> {
  for (const name of names) {
    const target = await readlink(join(dir, name)).catch(() => undefined);
    if (target !== posix.join(dataDirName, name)) return false;
  }
  return true;
}
