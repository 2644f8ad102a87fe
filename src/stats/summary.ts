import { rfc3339 } from '../api/time.js';
import type { DiskSnapshot, PodDisk } from './disk-stats.js';
import type { FsFigures, HostReading } from './host.js';
import type { PressureReading } from './psi.js';
import type { ContainerStats, CPUStats, FsStats, IOStats, MemoryStats, NodeSample, NodeStats, PodStats, StatsSnapshot, Summary, VolumeStats } from './types.js';
import { podUsages, type ContainerUsage, type PodUsage, type Usage } from './usage.js';

export interface SummaryOptions {
  /** The background disk figures (containers' rootfs and logs, volumes, images); omitted, none are given. */
  readonly disk?: DiskSnapshot;
  /**
   * `only_cpu_and_memory=true` (pkg/kubelet/server/stats/summary.go `GetCPUAndMemoryStats`): the
   * node's and pods' and containers' `cpu` and `memory` only, nothing about disks, IO or processes.
   */
  readonly onlyCpuAndMemory?: boolean;
}

/**
 * The kubelet's `/stats/summary` body (pkg/kubelet/server/stats/summary.go `Get`) from the sampler's
 * snapshot and the disk cache: the node's CPU, memory, IO pressure, `fs` (nodefs), `runtime.imageFs`
 * and `rlimit`; per pod its cgroup's CPU and memory (or its containers summed), IO pressure, local
 * volumes, `ephemeral-storage` and process count; per container CPU, memory, IO pressure, `rootfs`
 * and `logs`.
 */
export function buildSummary(nodeName: string, snap: StatsSnapshot, fallbackBootTime: Date, opts: SummaryOptions = {}): Summary {
  const full = !opts.onlyCpuAndMemory;
  const node: NodeStats = { nodeName, startTime: rfc3339(snap.node?.bootTime ?? fallbackBootTime) };
  if (snap.node) Object.assign(node, nodeCPUAndMemory(snap.node, snap.host?.psi));
  if (full && snap.host) Object.assign(node, nodeHost(snap.host, opts.disk?.imagesBytes));
  return {
    node,
    pods: podUsages(snap).map((p) => podStats(p, full ? snap.host : undefined, full ? opts.disk?.pods.get(p.ref.uid) : undefined, full)),
  };
}

function podStats(p: PodUsage, host: HostReading | undefined, disk: PodDisk | undefined, full: boolean): PodStats {
  const out: PodStats = {
    podRef: p.ref,
    startTime: rfc3339(p.startTime),
    containers: p.containers.map((c) => containerStats(c, host, disk, full)),
    cpu: cpuStats(p.total),
    memory: memoryStats(p.total),
  };
  if (!full) return out;
  const io = ioStats(p.total);
  if (io) out.io = io;
  if (disk) {
    const volumes = disk.volumes.map((v): VolumeStats => ({ ...fsFigures(rfc3339(disk.time), v.fs), usedBytes: v.usedBytes, inodesUsed: v.inodesUsed, name: v.name }));
    if (volumes.length) out.volume = volumes;
    out['ephemeral-storage'] = ephemeralStorage(out.containers, volumes, host?.fs, rfc3339(disk.time));
  }
  if (p.processes !== undefined) out.process_stats = { process_count: p.processes };
  return out;
}

function containerStats(c: ContainerUsage, host: HostReading | undefined, disk: PodDisk | undefined, full: boolean): ContainerStats {
  const out: ContainerStats = { name: c.name, startTime: rfc3339(c.startTime), cpu: cpuStats(c.usage), memory: memoryStats(c.usage) };
  if (!full) return out;
  const io = ioStats(c.usage);
  if (io) out.io = io;
  const size = disk?.containers.get(c.id);
  if (disk && size) {
    const time = rfc3339(disk.time);
    // The CRI stats provider: the writable layer on the image filesystem, with no inode count
    // from the runtime (zero). The engine keeps json-file logs under its data root, so logs are
    // given the image filesystem's figures too (the kubelet's /var/log/pods is on nodefs).
    out.rootfs = { ...fsFigures(time, host?.imageFs), usedBytes: size.rootfsBytes, inodesUsed: 0 };
    out.logs = { ...fsFigures(time, host?.imageFs), usedBytes: size.logsBytes, inodesUsed: size.logsInodes };
  }
  return out;
}

/**
 * pkg/kubelet/stats/helper.go `calcEphemeralStorage`: nodefs's capacity and free figures, with
 * `usedBytes` and `inodesUsed` summed over the containers' rootfs and logs and the local volumes.
 */
function ephemeralStorage(containers: readonly ContainerStats[], volumes: readonly VolumeStats[], nodefs: FsFigures | undefined, time: string): FsStats {
  let used = 0;
  let inodes = 0;
  for (const c of containers) {
    if (!c.rootfs) continue;
    used += (c.rootfs.usedBytes ?? 0) + (c.logs?.usedBytes ?? 0);
    inodes += (c.rootfs.inodesUsed ?? 0) + (c.logs?.inodesUsed ?? 0);
  }
  for (const v of volumes) {
    used += v.usedBytes ?? 0;
    inodes += v.inodesUsed ?? 0;
  }
  return { ...fsFigures(time, nodefs), usedBytes: used, inodesUsed: inodes };
}

/** A filesystem's capacity and free figures (no `usedBytes`: what uses it is the caller's). */
function fsFigures(time: string, f: FsFigures | undefined): FsStats {
  return f ? { time, availableBytes: f.availableBytes, capacityBytes: f.capacityBytes, inodesFree: f.inodesFree, inodes: f.inodes } : { time };
}

function nodeHost(h: HostReading, imagesBytes: number | undefined): Pick<NodeStats, 'io' | 'fs' | 'runtime' | 'rlimit'> {
  const time = rfc3339(h.timestamp);
  const out: Pick<NodeStats, 'io' | 'fs' | 'runtime' | 'rlimit'> = {};
  if (h.psi?.io) out.io = { time, psi: h.psi.io };
  // cadvisor_stats_provider.go `RootFsStats`: inodesUsed is inodes less inodesFree.
  if (h.fs) out.fs = { ...fsFigures(time, h.fs), usedBytes: h.fs.usedBytes, inodesUsed: h.fs.inodes - h.fs.inodesFree };
  // cri_stats_provider.go `ImageFsStats`: the runtime's bytes used by images on its filesystem's figures.
  if (h.imageFs) out.runtime = { imageFs: { ...fsFigures(time, h.imageFs), ...(imagesBytes !== undefined ? { usedBytes: imagesBytes } : {}) } };
  if (h.rlimit) out.rlimit = { time, maxpid: h.rlimit.maxpid, curproc: h.rlimit.curproc };
  return out;
}

function ioStats(u: Usage): IOStats | undefined {
  return u.psi?.io ? { time: rfc3339(u.time), psi: u.psi.io } : undefined;
}

export function cpuStats(u: Usage): CPUStats {
  return {
    time: rfc3339(u.time),
    ...(u.usageNanoCores !== undefined ? { usageNanoCores: u.usageNanoCores } : {}),
    usageCoreNanoSeconds: u.cpuUsageCoreNanoSeconds,
    ...(u.psi?.cpu ? { psi: u.psi.cpu } : {}),
  };
}

export function memoryStats(u: Usage): MemoryStats {
  return {
    time: rfc3339(u.time),
    ...(u.memoryAvailableBytes !== undefined ? { availableBytes: u.memoryAvailableBytes } : {}),
    usageBytes: u.memoryUsageBytes,
    workingSetBytes: u.memoryWorkingSetBytes,
    ...(u.memoryRssBytes !== undefined ? { rssBytes: u.memoryRssBytes } : {}),
    ...(u.pageFaults !== undefined ? { pageFaults: u.pageFaults } : {}),
    ...(u.majorPageFaults !== undefined ? { majorPageFaults: u.majorPageFaults } : {}),
    ...(u.psi?.memory ? { psi: u.psi.memory } : {}),
  };
}

function nodeCPUAndMemory(n: NodeSample, psi: PressureReading | undefined): Pick<NodeStats, 'cpu' | 'memory'> {
  const time = rfc3339(n.timestamp);
  return {
    cpu: { time, ...(n.usageNanoCores !== undefined ? { usageNanoCores: n.usageNanoCores } : {}), usageCoreNanoSeconds: n.cpuUsageCoreNanoSeconds, ...(psi?.cpu ? { psi: psi.cpu } : {}) },
    memory: {
      time,
      availableBytes: n.memoryAvailableBytes,
      usageBytes: n.memoryUsageBytes,
      workingSetBytes: n.memoryWorkingSetBytes,
      ...(n.memoryRssBytes !== undefined ? { rssBytes: n.memoryRssBytes } : {}),
      ...(psi?.memory ? { psi: psi.memory } : {}),
    },
  };
}
