import { stat, readdir, readFile, rm } from 'node:fs/promises';
import { isIP } from 'node:net';
import { join } from 'node:path';
import { isRecord } from '../../api/validation.js';
import type { Logger } from '../../logging/index.js';
import type { NetworkPlugin, NetworkReadiness, PodNetworkIdentity, PodNetworkSetUp, PodNetworkStatus, PodNetworkTearDown } from '../types.js';
import { type CacheEntry, listCacheEntries, removeCacheEntry, writeCacheEntry } from './cache.js';
import { LOOPBACK_NETWORK, type NetworkConfList, declares, loadDefaultNetwork, parseConfList } from './config.js';
import { type RuntimeConf, addNetworkList, delNetworkList } from './invoke.js';
import { KeyedMutex } from './keyed-mutex.js';
import { podIPsFromResult } from './result.js';

/**
 * nodelet's `cni` network plugin: it executes CNI plugins itself, as Mirantis/cri-dockerd
 * `network/cni/cni.go` (`cniNetworkPlugin`) does through containernetworking/cni `libcni`.
 */

export interface CNINetworkPluginOptions {
  readonly confDir: string;
  /** Searched in order for plugin executables; `CNI_PATH` is them joined by `:`. */
  readonly binDirs: readonly string[];
  /** libcni's cache dir (`results/` below it). */
  readonly cacheDir: string;
  readonly log: Logger;
  /** One ADD or DEL of a sandbox (loopback and default network together); cri-dockerd: 220 s. */
  readonly timeoutMs?: number;
  /** Conf dir reload period; cri-dockerd: 5 s. */
  readonly reloadMs?: number;
}

export const DEFAULT_TIMEOUT_MS = 220_000;
export const DEFAULT_RELOAD_MS = 5_000;
/** The pod's interface (cri-dockerd `network.DefaultInterfaceName`). */
export const POD_IFNAME = 'eth0';
const LO_IFNAME = 'lo';
/** host-local's default `dataDir` (containernetworking/plugins `plugins/ipam/host-local/backend/disk`). */
export const HOST_LOCAL_DEFAULT_DATA_DIR = '/var/lib/cni/networks';
/** A lease file is a few dozen bytes; a bigger file in the dir is not read. */
const MAX_LEASE_BYTES = 4096;

/** libcni `ValidateContainerID`: the ID goes into cache file names. */
const CONTAINER_ID_RE = /^[a-zA-Z0-9][a-zA-Z0-9_.-]*$/;

/** cri-dockerd `buildCNIRuntimeConf`: `CNI_ARGS` pairs of a pod. */
export function cniArgsFor(pod: PodNetworkIdentity): [string, string][] {
  return [
    ['IgnoreUnknown', '1'],
    ['K8S_POD_NAMESPACE', pod.podNamespace],
    ['K8S_POD_NAME', pod.podName],
    ['K8S_POD_INFRA_CONTAINER_ID', pod.sandboxId],
    ['K8S_POD_UID', pod.podUID],
  ];
}

/** The `ipRanges` capability of pod CIDRs: one range set per CIDR (cri-dockerd: `[[{subnet}]]`). */
export function ipRangesFor(cidrs: readonly string[]): { subnet: string }[][] {
  return cidrs.map((subnet) => [{ subnet }]);
}

/** The capability values a pod supplies (cri-dockerd `buildCNIRuntimeConf`). */
export function capabilityArgsFor(pod: PodNetworkSetUp, podCIDRs: readonly string[]): Record<string, unknown> {
  const caps: Record<string, unknown> = { portMappings: pod.portMappings.map((p) => ({ ...p })) };
  if (podCIDRs.length > 0) caps.ipRanges = ipRangesFor(podCIDRs);
  if (pod.bandwidth) caps.bandwidth = { ...pod.bandwidth };
  return caps;
}

/**
 * The `cni` `NetworkPlugin`. Per sandbox, operations are serialised; the default network's
 * attachment is cached (libcni format) after ADD and answered from memory by `podNetworkStatus`.
 */
export class CNINetworkPlugin implements NetworkPlugin {
  readonly name = 'cni';
  readonly #opts: Required<CNINetworkPluginOptions>;
  readonly #log: Logger;
  readonly #locks = new KeyedMutex();
  /** sandbox ID → cached attachment of its default network. */
  readonly #index = new Map<string, CacheEntry>();
  /** Sandboxes with an operation queued or running: garbage collection leaves their leases alone. */
  readonly #busy = new Map<string, number>();
  #network: NetworkConfList | undefined;
  #podCIDRs: readonly string[] = [];
  #timer: NodeJS.Timeout | undefined;
  #loading: Promise<void> | undefined;

  constructor(opts: CNINetworkPluginOptions) {
    this.#opts = { timeoutMs: DEFAULT_TIMEOUT_MS, reloadMs: DEFAULT_RELOAD_MS, ...opts };
    this.#log = opts.log;
  }

  /** The default network now chosen, if any. */
  get network(): NetworkConfList | undefined {
    return this.#network;
  }

  readiness(): NetworkReadiness {
    const net = this.#network;
    if (!net) return { ready: false, reason: 'NetworkPluginNotReady', message: 'cni config uninitialized' };
    if (declares(net, 'ipRanges') && this.#podCIDRs.length === 0) return { ready: false, reason: 'NetworkPluginNotReady', message: 'cni config needs ipRanges but no PodCIDR set' };
    return { ready: true };
  }

  hasCapability(name: string): boolean {
    return this.#network !== undefined && declares(this.#network, name);
  }

  setPodCIDRs(cidrs: readonly string[]): void {
    const value = cidrs.filter((c) => c !== '');
    if (this.#podCIDRs.length > 0 || value.length === 0) return;
    this.#podCIDRs = value;
    this.#log.info({ podCIDRs: value }, 'CNI: pod CIDRs set');
  }

  async start(): Promise<void> {
    const { entries, errors } = await listCacheEntries(this.#opts.cacheDir);
    for (const e of errors) this.#log.warn({ error: e }, 'CNI: unreadable cache entry skipped');
    for (const { entry } of entries) {
      if (entry.networkName === LOOPBACK_NETWORK.name || entry.ifName !== POD_IFNAME) continue;
      this.#index.set(entry.containerId, entry);
    }
    await this.reload();
    if (!this.#timer) {
      this.#timer = setInterval(() => void this.reload(), this.#opts.reloadMs);
      this.#timer.unref();
    }
  }

  stop(): void {
    if (this.#timer) clearInterval(this.#timer);
    this.#timer = undefined;
  }

  /** Reads the conf dir now (one read at a time); logs when the chosen network changes. */
  reload(): Promise<void> {
    this.#loading ??= this.#load().finally(() => (this.#loading = undefined));
    return this.#loading;
  }

  async #load(): Promise<void> {
    let next: NetworkConfList | undefined;
    let skipped: readonly string[] = [];
    try {
      ({ network: next, skipped } = await loadDefaultNetwork(this.#opts.confDir, this.#opts.binDirs));
    } catch (err) {
      this.#log.warn({ err }, 'CNI: loading the conf dir failed');
      return;
    }
    const prev = this.#network;
    if (prev?.file === next?.file && prev?.bytes.equals(next?.bytes ?? Buffer.alloc(0)) === true) return;
    if (!prev && !next) return;
    this.#network = next;
    if (next) this.#log.info({ network: next.name, file: next.file, plugins: next.plugins.map((p) => p.type), skipped }, 'CNI: default network chosen');
    else this.#log.warn({ confDir: this.#opts.confDir, skipped }, 'CNI: no valid network config; pod networks cannot be set up');
  }

  podNetworkStatus(sandboxId: string): PodNetworkStatus | undefined {
    const e = this.#index.get(sandboxId);
    if (!e) return undefined;
    try {
      return { ips: podIPsFromResult(e.result, e.netns) };
    } catch {
      return undefined;
    }
  }

  /** `task` under the sandbox's lock, the sandbox counted busy from the call until it settles. */
  #serialised<T>(sandboxId: string, task: () => Promise<T>): Promise<T> {
    this.#busy.set(sandboxId, (this.#busy.get(sandboxId) ?? 0) + 1);
    return this.#locks.run(sandboxId, task).finally(() => {
      const n = (this.#busy.get(sandboxId) ?? 1) - 1;
      if (n === 0) this.#busy.delete(sandboxId);
      else this.#busy.set(sandboxId, n);
    });
  }

  #deadline(): number {
    return performance.now() + this.#opts.timeoutMs;
  }

  setUpPod(pod: PodNetworkSetUp): Promise<PodNetworkStatus> {
    const bad = checkId(pod.sandboxId);
    if (bad) return Promise.reject(bad);
    return this.#serialised(pod.sandboxId, async () => {
      const net = this.#network;
      const ready = this.readiness();
      if (!net || !ready.ready) throw new Error(`network plugin cni not ready: ${ready.ready ? 'cni config uninitialized' : ready.message}`);
      const opts = { binDirs: this.#opts.binDirs, deadline: this.#deadline() };
      const args = cniArgsFor(pod);
      const rt: RuntimeConf = { containerId: pod.sandboxId, netns: pod.netnsPath, ifName: POD_IFNAME, args, capabilityArgs: capabilityArgsFor(pod, this.#podCIDRs) };
      // Loopback and the default network side by side, as containerd's go-cni attaches its
      // networks (`attachNetworks`, one goroutine each): they touch different interfaces.
      // cri-dockerd runs them one after the other, which adds a plugin run to every ADD. Both
      // settle before a failure is thrown, so no plugin still runs when the caller tears down.
      const [lo, main] = await Promise.allSettled([
        addNetworkList(LOOPBACK_NETWORK, { containerId: pod.sandboxId, netns: pod.netnsPath, ifName: LO_IFNAME, args, capabilityArgs: {} }, opts),
        addNetworkList(net, rt, opts),
      ]);
      if (lo.status === 'rejected') throw lo.reason;
      if (main.status === 'rejected') throw main.reason;
      const result = main.value;
      const ips = podIPsFromResult(result, pod.netnsPath);
      const entry: CacheEntry = { containerId: pod.sandboxId, config: net.bytes, ifName: POD_IFNAME, networkName: net.name, netns: pod.netnsPath, cniArgs: args, capabilityArgs: rt.capabilityArgs, result };
      await writeCacheEntry(this.#opts.cacheDir, entry);
      this.#index.set(pod.sandboxId, entry);
      this.#log.debug({ sandbox: pod.sandboxId, network: net.name, ips }, 'CNI: pod network set up');
      return { ips };
    });
  }

  tearDownPod(pod: PodNetworkTearDown): Promise<void> {
    const bad = checkId(pod.sandboxId);
    if (bad) return Promise.reject(bad);
    return this.#serialised(pod.sandboxId, async () => {
      const netns = pod.netnsPath && (await exists(pod.netnsPath)) ? pod.netnsPath : '';
      const opts = { binDirs: this.#opts.binDirs, deadline: this.#deadline() };
      const args = cniArgsFor(pod);
      // Side by side too (go-cni `Remove` runs its networks one by one, but they are independent).
      const lo = delNetworkList(LOOPBACK_NETWORK, { containerId: pod.sandboxId, netns, ifName: LO_IFNAME, args, capabilityArgs: {} }, undefined, opts).catch((err: unknown) => {
        this.#log.warn({ sandbox: pod.sandboxId, err }, 'CNI: loopback DEL failed');
      });
      try {
        await this.#delDefault(pod.sandboxId, netns, args, opts.deadline);
      } finally {
        await lo;
      }
    });
  }

  /**
   * DEL of the default network: with the cached attachment's config, args and result when there
   * is one, else with the current network (nothing to do without either). cri-dockerd
   * `deleteFromNetwork`: an error about a missing file (a netns gone) counts as done.
   */
  async #delDefault(sandboxId: string, netns: string, args: readonly (readonly [string, string])[], deadline: number): Promise<void> {
    const cached = this.#index.get(sandboxId);
    let list: NetworkConfList | undefined = this.#network;
    let rt: RuntimeConf = { containerId: sandboxId, netns, ifName: POD_IFNAME, args, capabilityArgs: {} };
    let prevResult: unknown;
    if (cached) {
      try {
        list = parseConfList(cached.config);
      } catch (err) {
        this.#log.warn({ sandbox: sandboxId, err }, 'CNI: cached config unusable; DEL with the current one');
      }
      rt = { ...rt, args: cached.cniArgs.length ? cached.cniArgs : args, capabilityArgs: cached.capabilityArgs };
      prevResult = cached.result;
    }
    if (list) {
      try {
        await delNetworkList(list, rt, prevResult, { binDirs: this.#opts.binDirs, deadline });
      } catch (err) {
        if (!(err as Error).message.includes('no such file or directory')) throw err;
        this.#log.info({ sandbox: sandboxId, err }, 'CNI: DEL found nothing to delete');
      }
    }
    if (cached) {
      await removeCacheEntry(this.#opts.cacheDir, cached.networkName, sandboxId, cached.ifName);
      if (this.#index.get(sandboxId) === cached) this.#index.delete(sandboxId);
    }
  }

  async garbageCollect(liveSandboxIds: ReadonlySet<string>): Promise<string[]> {
    const released = new Set<string>();
    const { entries } = await listCacheEntries(this.#opts.cacheDir);
    const cachedIds = new Set<string>();
    for (const { entry } of entries) {
      if (liveSandboxIds.has(entry.containerId) || this.#busy.has(entry.containerId)) {
        cachedIds.add(entry.containerId);
        continue;
      }
      if (entry.networkName === LOOPBACK_NETWORK.name) continue;
      const id = entry.containerId;
      try {
        await this.#locks.run(id, async () => {
          if (!this.#index.has(id)) this.#index.set(id, entry);
          await this.#delDefault(id, '', entry.cniArgs, this.#deadline());
        });
        released.add(id);
      } catch (err) {
        cachedIds.add(id);
        this.#log.warn({ sandbox: id, err }, 'CNI: garbage collection DEL failed; kept for the next round');
      }
    }
    // Asked at each lease, not from a snapshot: a sandbox created after the listing (so not in
    // `liveSandboxIds`) holds its lease from the start of its ADD while busy, then while indexed.
    // A snapshot of the index taken before its ADD ended, checked after it ended, would release
    // the lease of a running pod, and host-local would hand its IP to the next one.
    const keep = (cid: string) => liveSandboxIds.has(cid) || cachedIds.has(cid) || this.#index.has(cid) || this.#busy.has(cid);
    for (const dir of this.#leaseDirs(entries.map((e) => e.entry))) {
      for (const id of await releaseLeases(dir, keep, this.#log)) released.add(id);
    }
    return [...released];
  }

  /** host-local data dirs of the current network and of cached attachments' configs. */
  #leaseDirs(cached: readonly CacheEntry[]): string[] {
    const lists: NetworkConfList[] = [];
    if (this.#network) lists.push(this.#network);
    for (const e of cached) {
      try {
        lists.push(parseConfList(e.config));
      } catch {
        /* unusable config: no leases to find from it */
      }
    }
    const dirs = new Set<string>();
    for (const l of lists) for (const d of hostLocalDataDirs(l)) dirs.add(d);
    return [...dirs];
  }
}

/** `<dataDir>/<network name>` of each host-local IPAM in the list. */
export function hostLocalDataDirs(list: NetworkConfList): string[] {
  const out: string[] = [];
  for (const p of list.plugins) {
    const ipam = p.raw.ipam;
    if (!isRecord(ipam)) continue;
    const { type, dataDir } = ipam;
    if (type !== 'host-local') continue;
    out.push(join(typeof dataDir === 'string' && dataDir !== '' ? dataDir : HOST_LOCAL_DEFAULT_DATA_DIR, list.name));
  }
  return out;
}

/**
 * Deletes host-local lease files (named by the IP; content `<containerID>\r\n<ifname>`, or just
 * the ID in older versions) whose container is not kept. Resolves with the released IDs.
 */
export async function releaseLeases(dir: string, keep: (containerId: string) => boolean, log: Logger): Promise<string[]> {
  let names: string[];
  try {
    names = await readdir(dir);
  } catch {
    return [];
  }
  const released = new Set<string>();
  for (const n of names) {
    if (isIP(n) === 0) continue;
    const path = join(dir, n);
    try {
      const st = await stat(path);
      if (!st.isFile() || st.size > MAX_LEASE_BYTES) continue;
      const id = (await readFile(path, 'utf8')).split(/\r?\n/)[0]?.trim() ?? '';
      if (id === '' || keep(id)) continue;
      await rm(path, { force: true });
      released.add(id);
      log.info({ ip: n, sandbox: id, dir }, 'CNI: stale host-local lease released');
    } catch (err) {
      log.warn({ path, err }, 'CNI: lease file unreadable');
    }
  }
  return [...released];
}

/** An error for a sandbox ID libcni would refuse (it names cache files), else undefined. */
function checkId(id: string): Error | undefined {
  if (!CONTAINER_ID_RE.test(id) || id.length > 255) return new Error(`invalid sandbox ID ${JSON.stringify(id.slice(0, 100))}`);
  return undefined;
}

const exists = (path: string): Promise<boolean> => stat(path).then(() => true, () => false);
