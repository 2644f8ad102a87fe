import { readFile, statfs } from 'node:fs/promises';
import { cpus, hostname, release, totalmem } from 'node:os';
import type { NodeFacts } from './object.js';
import type { EngineFacts } from '../runtime/types.js';

/** GOARCH spelling of Node's `process.arch`. */
export function goArch(arch: string = process.arch): string {
  return ({ x64: 'amd64', ia32: '386', arm: 'arm', arm64: 'arm64', ppc64: 'ppc64le', s390x: 's390x' } as Record<string, string>)[arch] ?? arch;
}

async function firstLine(path: string): Promise<string> {
  try {
    return (await readFile(path, 'utf8')).split('\n')[0]?.trim() ?? '';
  } catch {
    return '';
  }
}

/** `PRETTY_NAME` of /etc/os-release, as the kubelet's `osImage`. */
export function parseOsRelease(text: string): string {
  const m = /^PRETTY_NAME=(?:"([^"]*)"|(.*))$/m.exec(text);
  return (m?.[1] ?? m?.[2] ?? '').trim() || 'Linux';
}

/**
 * Reads the node's facts from the host (/etc, /proc, /sys, the disk holding `rootDir`) and the
 * container engine (version, images). Missing host files give empty strings, as on the kubelet.
 */
export async function readNodeFacts(opts: {
  /** The container engine's version and images (`DockerRuntime.engineFacts`). */
  engine: () => Promise<EngineFacts>;
  nodeName: string;
  nodeIP: string;
  port: number;
  rootDir: string;
  kubeletVersion: string;
  maxPods: number;
}): Promise<NodeFacts> {
  const [engine, machineID, productUUID, bootID, osRelease, disk] = await Promise.all([
    opts.engine(),
    firstLine('/etc/machine-id'),
    firstLine('/sys/class/dmi/id/product_uuid'),
    firstLine('/proc/sys/kernel/random/boot_id'),
    readFile('/etc/os-release', 'utf8').catch(() => ''),
    statfs(opts.rootDir).catch(() => statfs('/')),
  ]);
  return {
    nodeName: opts.nodeName,
    hostname: hostname().toLowerCase(),
    nodeIP: opts.nodeIP,
    port: opts.port,
    kubeletVersion: opts.kubeletVersion,
    containerRuntimeVersion: engine.runtimeVersion,
    kernelVersion: release(),
    osImage: parseOsRelease(osRelease),
    operatingSystem: 'linux',
    architecture: goArch(),
    machineID,
    systemUUID: productUUID || machineID,
    bootID,
    cpuCores: cpus().length,
    memoryBytes: totalmem(),
    ephemeralStorageBytes: disk.blocks * disk.bsize,
    maxPods: opts.maxPods,
    images: engine.images.map((i) => ({ names: [...i.names], sizeBytes: i.sizeBytes })),
  };
}
