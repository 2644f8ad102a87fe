import { mkdir, stat, writeFile } from 'node:fs/promises';
import { isAbsolute } from 'node:path';

const supported = ['', 'DirectoryOrCreate', 'Directory', 'FileOrCreate', 'File', 'Socket', 'CharDevice', 'BlockDevice'];

/**
 * The kubelet's hostPath `checkType`: `DirectoryOrCreate` and `FileOrCreate` create what is
 * missing (0755 directories, an empty 0644 file in an existing directory), the other types require the kind of file
 * they name, `""` checks nothing. Throws the kubelet's `hostPath type check failed` messages.
 */
export async function checkHostPath(path: string, type: string | undefined): Promise<void> {
  const t = type ?? '';
  if (!isAbsolute(path)) throw new Error(`hostPath ${JSON.stringify(path)} must be an absolute path`);
  if (!supported.includes(t)) throw new Error(`${t} is an invalid volume type`);
  if (t === '') return;
  const st = await stat(path).catch(() => undefined);
  const fail = (what: string) => new Error(`hostPath type check failed: ${path} is not ${what}`);
  switch (t) {
    case 'DirectoryOrCreate':
      if (!st) {
        await mkdir(path, { recursive: true, mode: 0o755 });
        return;
      }
    // falls through
    case 'Directory':
      if (!st?.isDirectory()) throw fail('a directory');
      return;
    case 'FileOrCreate':
      if (!st) {
        // As the kubelet's MakeFile: the parent directory must exist.
        await writeFile(path, '', { mode: 0o644, flag: 'a' });
        return;
      }
    // falls through
    case 'File':
      if (!st?.isFile()) throw fail('a file');
      return;
    case 'Socket':
      if (!st?.isSocket()) throw fail('a socket file');
      return;
    case 'CharDevice':
      if (!st?.isCharacterDevice()) throw fail('a character device');
      return;
    default:
      if (!st?.isBlockDevice()) throw fail('a block device');
  }
}
