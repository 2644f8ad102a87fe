/**
 * Descriptor-anchored paths, Node's stand-in for `openat`/`fchmodat` (subpath.ts, ownership.ts):
 * `/proc/self/fd/<fd>` is a magic link the kernel resolves to the very file `fd` holds, never by
 * name, so `<fd path>/<name>` looks `<name>` up in that directory whatever was renamed since.
 */

/** Linux `O_PATH` (not in `fs.constants`): a descriptor that only names a file, opening nothing. */
export const O_PATH = 0o10000000;

/** `/proc/self/fd/<fd>`, or `<name>` inside the directory `fd` holds. */
export function fdPath(fd: number, name?: string): string {
  return name === undefined ? `/proc/self/fd/${fd}` : `/proc/self/fd/${fd}/${name}`;
}
