import { constants } from 'node:fs';
import { access, readFile, readdir, stat } from 'node:fs/promises';
import { extname, join } from 'node:path';
import { isRecord } from '../../api/validation.js';

/**
 * Loading the CNI conf dir: libcni `libcni/conf.go` (`ConfFiles`, `ConfFromBytes`,
 * `ConfListFromBytes`, `ConfListFromConf`) and cri-dockerd's choice of the default network
 * (Mirantis/cri-dockerd `network/cni/cni.go`, `getDefaultCNINetwork`).
 */

/** One plugin of a list, as written in the config (the object is passed on, with injected keys). */
export interface PluginConf {
  /** The executable's name in one of the bin dirs. */
  readonly type: string;
  /** `capabilities` keys set to `true` (libcni only injects a runtime value a plugin declares). */
  readonly capabilities: readonly string[];
  /** The plugin's config object as parsed. */
  readonly raw: Readonly<Record<string, unknown>>;
}

/** A network configuration list (`.conflist`, or a `.conf` wrapped into one). */
export interface NetworkConfList {
  readonly name: string;
  readonly cniVersion: string;
  readonly plugins: readonly PluginConf[];
  /** The list's bytes (a wrapped `.conf` is serialised): cached with a result as libcni's `config`. */
  readonly bytes: Buffer;
  /** The file it came from; `''` for built-in and cached lists. */
  readonly file: string;
}

/** The conf dir's extensions libcni reads (`ConfFiles(dir, [".conf", ".conflist", ".json"])`). */
export const CONF_EXTENSIONS: readonly string[] = ['.conf', '.conflist', '.json'];
/** No config file is larger than this; a bigger one is skipped. */
export const MAX_CONF_BYTES = 1024 * 1024;

/** libcni `pkg/utils` `ValidateNetworkName`: the name goes into cache file names. */
const NAME_RE = /^[a-zA-Z0-9][a-zA-Z0-9_.-]*$/;
/** Plugin types are file names in a bin dir, never paths. */
const TYPE_RE = /^[a-zA-Z0-9][a-zA-Z0-9_.-]*$/;
const VERSION_RE = /^\d+\.\d+\.\d+$/;

export class ConfError extends Error {
  override name = 'ConfError';
}

function parsePlugin(v: unknown, where: string): PluginConf {
  if (!isRecord(v)) throw new ConfError(`${where}: not an object`);
  const type = v.type;
  if (typeof type !== 'string' || type === '') throw new ConfError(`${where}: missing "type"`);
  if (!TYPE_RE.test(type) || type.length > 255) throw new ConfError(`${where}: invalid "type" ${JSON.stringify(type)}`);
  const caps: string[] = [];
  if (v.capabilities !== undefined) {
    if (!isRecord(v.capabilities)) throw new ConfError(`${where}: "capabilities" is not an object`);
    for (const [k, on] of Object.entries(v.capabilities)) if (on === true) caps.push(k);
  }
  return { type, capabilities: caps, raw: v };
}

function checkHeader(obj: Record<string, unknown>): { name: string; cniVersion: string } {
  const { name, cniVersion } = obj;
  if (typeof name !== 'string' || name === '') throw new ConfError('missing "name"');
  if (!NAME_RE.test(name) || name.length > 255) throw new ConfError(`invalid network name ${JSON.stringify(name)}`);
  if (typeof cniVersion !== 'string' || !VERSION_RE.test(cniVersion)) throw new ConfError(`invalid "cniVersion" ${JSON.stringify(cniVersion)}`);
  return { name, cniVersion };
}

function parseJSONObject(bytes: Buffer | string): Record<string, unknown> {
  let obj: unknown;
  try {
    obj = JSON.parse(typeof bytes === 'string' ? bytes : bytes.toString('utf8'));
  } catch (err) {
    throw new ConfError(`invalid JSON: ${(err as Error).message}`);
  }
  if (!isRecord(obj)) throw new ConfError('not a JSON object');
  return obj;
}

/** libcni `ConfListFromBytes`: a list with `name`, `cniVersion` and at least one plugin. */
export function parseConfList(bytes: Buffer | string, file = ''): NetworkConfList {
  const obj = parseJSONObject(bytes);
  const { name, cniVersion } = checkHeader(obj);
  if (!Array.isArray(obj.plugins) || obj.plugins.length === 0) throw new ConfError(`network ${name}: no "plugins"`);
  const plugins = obj.plugins.map((p: unknown, i) => parsePlugin(p, `network ${name} plugin ${i}`));
  return { name, cniVersion, plugins, bytes: Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes), file };
}

/** libcni `ConfFromBytes` + `ConfListFromConf`: a single plugin config wrapped into a list. */
export function parseConf(bytes: Buffer | string, file = ''): NetworkConfList {
  const obj = parseJSONObject(bytes);
  const { name, cniVersion } = checkHeader(obj);
  const plugin = parsePlugin(obj, `network ${name}`);
  const list = Buffer.from(JSON.stringify({ cniVersion, name, plugins: [obj] }));
  return { name, cniVersion, plugins: [plugin], bytes: list, file };
}

/** A file by its extension: `.conflist` is a list, `.conf`/`.json` a single plugin (as cri-dockerd). */
export function parseConfFile(file: string, bytes: Buffer): NetworkConfList {
  return extname(file) === '.conflist' ? parseConfList(bytes, file) : parseConf(bytes, file);
}

/** The first of `binDirs` holding an executable regular file named `type` (libcni `invoke.FindInPath`). */
export async function findPlugin(type: string, binDirs: readonly string[]): Promise<string | undefined> {
  if (!TYPE_RE.test(type)) return undefined;
  for (const dir of binDirs) {
    const p = join(dir, type);
    try {
      const st = await stat(p);
      if (!st.isFile()) continue;
      await access(p, constants.X_OK);
      return p;
    } catch {
      /* not here */
    }
  }
  return undefined;
}

/** The built-in loopback list (Mirantis/cri-dockerd `network/cni/cni_others.go`, `getLoNetwork`). */
export const LOOPBACK_NETWORK: NetworkConfList = parseConfList('{"cniVersion":"0.2.0","name":"cni-loopback","plugins":[{"type":"loopback"}]}');

export interface LoadResult {
  /** The chosen network, if any file qualified. */
  readonly network?: NetworkConfList;
  /** Why each file before (and instead of) the chosen one was skipped: `file: reason`. */
  readonly skipped: readonly string[];
}

/**
 * cri-dockerd `getDefaultCNINetwork`: the conf dir's files with a CNI extension, sorted by name;
 * the first that parses, has plugins, and whose every plugin type is an executable in a bin dir.
 * A missing conf dir is no network (not an error).
 */
export async function loadDefaultNetwork(confDir: string, binDirs: readonly string[]): Promise<LoadResult> {
  let names: string[];
  try {
    names = await readdir(confDir);
  } catch (err) {
    return { skipped: [`${confDir}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`] };
  }
  const skipped: string[] = [];
  for (const n of names.filter((f) => CONF_EXTENSIONS.includes(extname(f))).sort()) {
    const file = join(confDir, n);
    try {
      const st = await stat(file);
      if (!st.isFile()) continue;
      if (st.size > MAX_CONF_BYTES) throw new ConfError(`larger than ${MAX_CONF_BYTES} bytes`);
      const net = parseConfFile(file, await readFile(file));
      for (const p of net.plugins) {
        if (!(await findPlugin(p.type, binDirs))) throw new ConfError(`plugin type ${JSON.stringify(p.type)} not found in ${binDirs.join(':')}`);
      }
      return { network: net, skipped };
    } catch (err) {
      skipped.push(`${file}: ${(err as Error).message}`);
    }
  }
  return { skipped };
}

/** Whether any plugin of `net` declares the capability. */
export function declares(net: NetworkConfList, capability: string): boolean {
  return net.plugins.some((p) => p.capabilities.includes(capability));
}
