import { type NetworkConfList, type PluginConf, findPlugin } from './config.js';
import { type CNICommand, PluginError, execPlugin, formatCNIArgs } from './exec.js';
import { compareVersions } from './result.js';

/**
 * Running a whole list: containernetworking/cni `libcni/api.go` (`AddNetworkList`,
 * `DelNetworkList`, `buildOneConfig`, `injectRuntimeConfig`).
 */

/** What the runtime supplies for one attachment (libcni `RuntimeConf`). */
export interface RuntimeConf {
  readonly containerId: string;
  /** `''`: no netns (a DEL after the sandbox is gone). */
  readonly netns: string;
  readonly ifName: string;
  readonly args: readonly (readonly [string, string])[];
  /** Capability name → value; a plugin gets the ones it declares (`runtimeConfig`). */
  readonly capabilityArgs: Readonly<Record<string, unknown>>;
}

export interface InvokeOptions {
  readonly binDirs: readonly string[];
  /** Monotonic deadline (`performance.now()` ms) of the whole operation. */
  readonly deadline: number;
}

/**
 * libcni `buildOneConfig` + `injectRuntimeConfig`: the plugin's object with the list's `name`
 * and `cniVersion`, `prevResult` when there is one, and `runtimeConfig` holding only the
 * capabilities the plugin declares and the runtime supplies. `capabilities` itself is not sent.
 */
export function buildOneConfig(list: NetworkConfList, plugin: PluginConf, rt: RuntimeConf, prevResult: unknown): Record<string, unknown> {
  const conf: Record<string, unknown> = { ...plugin.raw, name: list.name, cniVersion: list.cniVersion };
  delete conf.capabilities;
  delete conf.prevResult;
  if (prevResult !== undefined) conf.prevResult = prevResult;
  const runtimeConfig: Record<string, unknown> = {};
  for (const cap of plugin.capabilities) {
    const v = rt.capabilityArgs[cap];
    if (v !== undefined) runtimeConfig[cap] = v;
  }
  if (Object.keys(runtimeConfig).length > 0) conf.runtimeConfig = runtimeConfig;
  else delete conf.runtimeConfig;
  return conf;
}

/** How long a plugin's path, once found, is used without looking again: the conf dir's reload period (plugin.ts `DEFAULT_RELOAD_MS`). */
export const PLUGIN_PATH_TTL_MS = 5_000;
const foundPaths = new Map<string, { path: string; at: number }>();

/**
 * `findPlugin` (libcni `FindInPath`, a stat and an access per directory) remembered for
 * PLUGIN_PATH_TTL_MS: a burst runs the same few plugins hundreds of times, and a binary added or
 * removed is seen within the same period as a changed network config. Misses are never remembered.
 */
export async function findPluginCached(type: string, binDirs: readonly string[], now = performance.now()): Promise<string | undefined> {
  const key = `${type}\0${binDirs.join('\0')}`;
  const hit = foundPaths.get(key);
  if (hit && now - hit.at < PLUGIN_PATH_TTL_MS) return hit.path;
  const path = await findPlugin(type, binDirs);
  if (path) foundPaths.set(key, { path, at: now });
  else foundPaths.delete(key);
  return path;
}

async function runPlugin(command: CNICommand, list: NetworkConfList, plugin: PluginConf, rt: RuntimeConf, prevResult: unknown, opts: InvokeOptions): Promise<unknown> {
  const path = await findPluginCached(plugin.type, opts.binDirs);
  if (!path) throw new PluginError(`plugin type=${JSON.stringify(plugin.type)} failed (${command.toLowerCase()}): failed to find plugin ${JSON.stringify(plugin.type)} in path [${opts.binDirs.join(' ')}]`);
  return execPlugin({
    path,
    type: plugin.type,
    command,
    containerId: rt.containerId,
    netns: rt.netns,
    ifName: rt.ifName,
    args: formatCNIArgs(rt.args),
    cniPath: opts.binDirs.join(':'),
    stdin: Buffer.from(JSON.stringify(buildOneConfig(list, plugin, rt, prevResult))),
    deadline: opts.deadline,
  });
}

/** libcni `AddNetworkList`: each plugin in order, each given the previous one's result. Resolves with the last result. */
export async function addNetworkList(list: NetworkConfList, rt: RuntimeConf, opts: InvokeOptions): Promise<Record<string, unknown>> {
  let prev: unknown;
  for (const plugin of list.plugins) {
    const result = await runPlugin('ADD', list, plugin, rt, prev, opts);
    if (typeof result !== 'object' || result === null || Array.isArray(result)) {
      throw new PluginError(`plugin type=${JSON.stringify(plugin.type)} failed (add): no result object`);
    }
    prev = result;
  }
  return prev as Record<string, unknown>;
}

/**
 * libcni `DelNetworkList`: the plugins in reverse order; from spec 0.4.0 on each is given the
 * cached ADD result as `prevResult`.
 */
export async function delNetworkList(list: NetworkConfList, rt: RuntimeConf, cachedResult: unknown, opts: InvokeOptions): Promise<void> {
  const prev = compareVersions(list.cniVersion, '0.4.0') >= 0 ? cachedResult : undefined;
  for (const plugin of [...list.plugins].reverse()) await runPlugin('DEL', list, plugin, rt, prev, opts);
}
