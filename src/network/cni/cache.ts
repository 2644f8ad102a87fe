import { randomBytes } from 'node:crypto';
import { mkdir, open, readdir, rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { isRecord } from '../../api/validation.js';

/**
 * libcni's result cache, in its format so `cnitool` and other runtimes read it:
 * containernetworking/cni `libcni/api.go` (`cachedInfo`, `getCacheFilePath`, `cacheAdd`,
 * `cacheDel`): `<cacheDir>/results/<networkName>-<containerID>-<ifName>`, mode 0600 in a 0700 dir.
 */

export const CACHE_KIND = 'cniCacheV1';
/** A cache file larger than this is not read (a result is a few hundred bytes). */
export const MAX_CACHE_FILE_BYTES = 4 * 1024 * 1024;

export interface CacheEntry {
  readonly containerId: string;
  /** The list's bytes as ADD used them (base64 in the file, Go's `[]byte`). */
  readonly config: Buffer;
  readonly ifName: string;
  readonly networkName: string;
  readonly netns: string;
  readonly cniArgs: readonly (readonly [string, string])[];
  readonly capabilityArgs: Readonly<Record<string, unknown>>;
  /** The list's final ADD result. */
  readonly result: Readonly<Record<string, unknown>>;
}

export function cacheFilePath(cacheDir: string, networkName: string, containerId: string, ifName: string): string {
  return join(cacheDir, 'results', `${networkName}-${containerId}-${ifName}`);
}

/** The file's JSON (libcni `cachedInfo`; empty `netns`, `cniArgs`, `capabilityArgs` omitted, as Go's `omitempty`). */
export function serializeCacheEntry(e: CacheEntry): string {
  const obj: Record<string, unknown> = {
    kind: CACHE_KIND,
    containerId: e.containerId,
    config: e.config.toString('base64'),
    ifName: e.ifName,
    networkName: e.networkName,
  };
  if (e.netns) obj.netns = e.netns;
  if (e.cniArgs.length) obj.cniArgs = e.cniArgs.map(([k, v]) => [k, v]);
  if (Object.keys(e.capabilityArgs).length) obj.capabilityArgs = e.capabilityArgs;
  obj.result = e.result;
  return JSON.stringify(obj);
}

/** Parses a cache file; throws on anything that is not a `cniCacheV1` entry with a result. */
export function parseCacheEntry(text: string): CacheEntry {
  const obj: unknown = JSON.parse(text);
  if (!isRecord(obj)) throw new Error('cache entry is not an object');
  if (obj.kind !== CACHE_KIND) throw new Error(`cache entry kind ${JSON.stringify(obj.kind)} is not ${CACHE_KIND}`);
  const str = (k: string, optional = false): string => {
    const v = obj[k];
    if (v === undefined && optional) return '';
    if (typeof v !== 'string') throw new Error(`cache entry "${k}" is not a string`);
    return v;
  };
  const cniArgs: [string, string][] = [];
  if (obj.cniArgs !== undefined && obj.cniArgs !== null) {
    if (!Array.isArray(obj.cniArgs)) throw new Error('cache entry "cniArgs" is not a list');
    for (const p of obj.cniArgs as unknown[]) {
      if (!Array.isArray(p) || p.length !== 2 || typeof p[0] !== 'string' || typeof p[1] !== 'string') throw new Error('cache entry "cniArgs" holds a non-pair');
      cniArgs.push([p[0], p[1]]);
    }
  }
  const caps = obj.capabilityArgs ?? {};
  if (!isRecord(caps)) throw new Error('cache entry "capabilityArgs" is not an object');
  if (!isRecord(obj.result)) throw new Error('cache entry has no result');
  return {
    containerId: str('containerId'),
    config: Buffer.from(str('config'), 'base64'),
    ifName: str('ifName'),
    networkName: str('networkName'),
    netns: str('netns', true),
    cniArgs,
    capabilityArgs: caps,
    result: obj.result,
  };
}

/** Writes the entry atomically (a temp file in the same dir, then rename). */
export async function writeCacheEntry(cacheDir: string, e: CacheEntry): Promise<string> {
  const dir = join(cacheDir, 'results');
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const path = cacheFilePath(cacheDir, e.networkName, e.containerId, e.ifName);
  const tmp = `${path}.tmp-${randomBytes(6).toString('hex')}`;
  try {
    await writeFile(tmp, serializeCacheEntry(e), { mode: 0o600, flag: 'wx' });
    await rename(tmp, path);
  } catch (err) {
    await rm(tmp, { force: true });
    throw err;
  }
  return path;
}

export async function removeCacheEntry(cacheDir: string, networkName: string, containerId: string, ifName: string): Promise<void> {
  await rm(cacheFilePath(cacheDir, networkName, containerId, ifName), { force: true });
}

/** Reads at most `MAX_CACHE_FILE_BYTES` of a file; a longer one is refused. */
async function readCapped(path: string): Promise<string> {
  const fh = await open(path, 'r');
  try {
    const { size } = await fh.stat();
    if (size > MAX_CACHE_FILE_BYTES) throw new Error(`larger than ${MAX_CACHE_FILE_BYTES} bytes`);
    // One byte more than the file says, to notice it growing past the cap while being read.
    const buf = Buffer.alloc(Math.min(size + 4096, MAX_CACHE_FILE_BYTES + 1));
    let n = 0;
    for (;;) {
      const { bytesRead } = await fh.read(buf, n, buf.length - n, n);
      if (bytesRead === 0) break;
      n += bytesRead;
      if (n > MAX_CACHE_FILE_BYTES) throw new Error(`larger than ${MAX_CACHE_FILE_BYTES} bytes`);
      if (n === buf.length) break;
    }
    return buf.subarray(0, n).toString('utf8');
  } finally {
    await fh.close();
  }
}

export async function readCacheEntry(path: string): Promise<CacheEntry> {
  return parseCacheEntry(await readCapped(path));
}

/** Every readable entry of the cache dir, with what could not be read (`path: reason`). */
export async function listCacheEntries(cacheDir: string): Promise<{ entries: { path: string; entry: CacheEntry }[]; errors: string[] }> {
  const dir = join(cacheDir, 'results');
  let names: string[];
  try {
    names = await readdir(dir);
  } catch {
    return { entries: [], errors: [] };
  }
  const entries: { path: string; entry: CacheEntry }[] = [];
  const errors: string[] = [];
  for (const n of names.sort()) {
    if (n.includes('.tmp-')) continue;
    const path = join(dir, n);
    try {
      entries.push({ path, entry: await readCacheEntry(path) });
    } catch (err) {
      errors.push(`${path}: ${(err as Error).message}`);
    }
  }
  return { entries, errors };
}
