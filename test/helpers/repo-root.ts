import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The repository root: the nearest directory above this file holding nodelet's package.json. Found
 * by walking up rather than by a fixed `../..`, so the path holds both when the tests run from
 * source and when the bench runs this file compiled into dist-bench/test/helpers.
 */
export function repoRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    const pkg = join(dir, 'package.json');
    if (existsSync(pkg) && (JSON.parse(readFileSync(pkg, 'utf8')) as { name?: string }).name === 'nodelet') return dir;
    const up = dirname(dir);
    if (up === dir) throw new Error('cannot find the nodelet repository root');
    dir = up;
  }
}
