import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type Docker from 'dockerode';
import type { Logger } from '../../logging/index.js';
import type { EngineName } from './engine.js';

/**
 * `securityContext.privileged` where the host cannot grant every capability.
 *
 * Docker's `Privileged` asks runc for every capability Docker knows (moby `oci/caps`
 * `GetAllCapabilities`), whatever the daemon's own bounding set holds. Where root lacks one —
 * a VM sandbox or a container whose bounding set has no `CAP_SYS_RESOURCE`, as this project's CI
 * machine — every privileged start fails with `unable to apply caps: operation not permitted`,
 * and so would the kubelet's through cri-dockerd, which passes `Privileged` on. containerd's CRI
 * instead gives a privileged container the runtime's own current capabilities
 * (`oci.WithPrivileged` → `WithAllCurrentCapabilities`, containerd `pkg/cap.Current`).
 *
 * nodelet does what containerd does, in Docker's terms, only where it must (a capability of the
 * kernel missing from its own bounding set): every capability it holds that Docker knows, no
 * seccomp, AppArmor or SELinux confinement, no masked or read-only `/proc` paths, every host
 * device with a device cgroup that allows all. What such a container does not get, said rather
 * than hidden: the missing capabilities, and a writable `/sys` and cgroupfs (Docker mounts them
 * read-only for any container that is not `Privileged`). Everywhere else `Privileged` is passed
 * through unchanged.
 */

/** Linux capabilities by number (`include/uapi/linux/capability.h`), without `CAP_`. */
export const CAPABILITIES = [
  'CHOWN', 'DAC_OVERRIDE', 'DAC_READ_SEARCH', 'FOWNER', 'FSETID', 'KILL', 'SETGID', 'SETUID', 'SETPCAP', 'LINUX_IMMUTABLE',
  'NET_BIND_SERVICE', 'NET_BROADCAST', 'NET_ADMIN', 'NET_RAW', 'IPC_LOCK', 'IPC_OWNER', 'SYS_MODULE', 'SYS_RAWIO', 'SYS_CHROOT',
  'SYS_PTRACE', 'SYS_PACCT', 'SYS_ADMIN', 'SYS_BOOT', 'SYS_NICE', 'SYS_RESOURCE', 'SYS_TIME', 'SYS_TTY_CONFIG', 'MKNOD', 'LEASE',
  'AUDIT_WRITE', 'AUDIT_CONTROL', 'SETFCAP', 'MAC_OVERRIDE', 'MAC_ADMIN', 'SYSLOG', 'WAKE_ALARM', 'BLOCK_SUSPEND', 'AUDIT_READ',
  'PERFMON', 'BPF', 'CHECKPOINT_RESTORE',
] as const;

export interface CapabilityBounds {
  /** Capabilities of the kernel (0…`cap_last_cap`) in the bounding set, by name. */
  readonly granted: readonly string[];
  /** Capabilities of the kernel the bounding set lacks: non-empty means Docker's `Privileged` fails. */
  readonly missing: readonly string[];
}

/**
 * The bounding set `CapBnd` (hex, from `/proc/<pid>/status`) against the kernel's capabilities
 * 0…`lastCap` (`/proc/sys/kernel/cap_last_cap`). Numbers without a name here are left out.
 */
export function capabilityBounds(capBndHex: string, lastCap: number): CapabilityBounds {
  const bounding = BigInt(`0x${capBndHex.trim() || '0'}`);
  const granted: string[] = [];
  const missing: string[] = [];
  for (let n = 0; n <= lastCap && n < CAPABILITIES.length; n++) {
    const name = CAPABILITIES[n] as string;
    ((bounding >> BigInt(n)) & 1n ? granted : missing).push(name);
  }
  return { granted, missing };
}

/** nodelet's own bounding set against the kernel's capabilities (see `capabilityBounds`). */
export async function ownCapabilityBounds(): Promise<CapabilityBounds> {
  const [status, last] = await Promise.all([readFile('/proc/self/status', 'utf8'), readFile('/proc/sys/kernel/cap_last_cap', 'utf8')]);
  const capBnd = /^CapBnd:\s*([0-9a-f]+)$/m.exec(status)?.[1] ?? '0';
  return capabilityBounds(capBnd, Number(last.trim()));
}

/** Entries of /dev that are not the host's devices (runc `libcontainer/devices` `HostDevices`). */
const NOT_DEVICES = new Set(['pts', 'shm', 'fd', 'mqueue', '.lxc', '.lxd-mounts', '.udev', 'console']);

/** The host's character and block devices under `root` (symlinks and sockets left out), sorted. */
export async function hostDevices(root = '/dev'): Promise<string[]> {
  const out: string[] = [];
  const walk = async (dir: string): Promise<void> => {
    let entries;
    try {
      entries = await readdir(dir, { withFileTypes: true });
    } catch {
      return; // vanished, or not readable: not a device to hand on
    }
    for (const e of entries) {
      if (dir === root && NOT_DEVICES.has(e.name)) continue;
      const path = join(dir, e.name);
      if (e.isDirectory()) await walk(path);
      else if (e.isCharacterDevice() || e.isBlockDevice()) out.push(path);
    }
  };
  await walk(root);
  return out.sort();
}

/**
 * The host config of a privileged container bounded by `granted`: `base` (what `dockerSecurity`
 * made, `Privileged` included) with `Privileged` replaced by its parts, and the container's own
 * `CapAdd`/`CapDrop` dropped as both engines' privileged modes ignore them. `known` limits the
 * capabilities to those the engine knows (Docker 20.10 knows none past `AUDIT_READ`, and refuses
 * an unknown name, as its own `Privileged` never asks for one).
 */
export function boundedPrivileged(base: Docker.HostConfig, granted: readonly string[], devices: readonly string[], known?: ReadonlySet<string>): Docker.HostConfig {
  // As with Docker's and containerd's privileged, the container's own add and drop lists give way.
  const { Privileged: _privileged, CapAdd: _add, CapDrop: _drop, ...rest } = base;
  const caps = granted.filter((c) => known === undefined || known.has(c));
  const securityOpt = new Set([...(rest.SecurityOpt ?? []), 'seccomp=unconfined', 'apparmor=unconfined', 'label=disable']);
  return {
    ...rest,
    CapAdd: caps,
    SecurityOpt: [...securityOpt],
    MaskedPaths: [],
    ReadonlyPaths: [],
    Devices: devices.map((path) => ({ PathOnHost: path, PathInContainer: path, CgroupPermissions: 'rwm' })),
    DeviceCgroupRules: ['a *:* rwm'],
  };
}

/** The capability an engine refused as unknown (`invalid CapAdd: unknown capability: "CAP_BPF"`). */
export function unknownCapability(err: unknown): string | undefined {
  const message = err instanceof Error ? err.message : String(err);
  return /unknown capability: "?(?:CAP_)?([A-Z_]+)"?/.exec(message)?.[1];
}

/**
 * Decides, per privileged container, between Docker's `Privileged` and `boundedPrivileged`: the
 * bounding set is read once, the capabilities the engine turned down as unknown are remembered,
 * and the substitution is logged once.
 */
export class PrivilegedMode {
  readonly #log: Logger;
  readonly #readBounds: () => Promise<CapabilityBounds>;
  #bounds: Promise<CapabilityBounds> | undefined;
  readonly #unknown = new Set<string>();
  #logged = false;

  constructor(log: Logger, readBounds: () => Promise<CapabilityBounds> = ownCapabilityBounds) {
    this.#log = log;
    this.#readBounds = readBounds;
  }

  /** `base` unchanged unless it asks for `Privileged` on Docker where the host cannot grant every capability. */
  async hostConfig(base: Docker.HostConfig, engine: EngineName): Promise<Docker.HostConfig> {
    // Podman's privileged mode was not measured on such a host: passed through as it is.
    if (!base.Privileged || engine !== 'docker') return base;
    this.#bounds ??= this.#readBounds().catch(() => ({ granted: [...CAPABILITIES], missing: [] }));
    const { granted, missing } = await this.#bounds;
    if (missing.length === 0) return base;
    if (!this.#logged) {
      this.#logged = true;
      this.#log.warn({ missing }, 'Privileged containers get the capabilities this host grants: Docker\'s own privileged mode asks for capabilities missing from the bounding set, and would fail');
    }
    const known = new Set(CAPABILITIES.filter((c) => !this.#unknown.has(c)));
    return boundedPrivileged(base, granted, await hostDevices(), known);
  }

  /** After a create failed: whether it named a capability the engine does not know (then retry). */
  refused(err: unknown): boolean {
    const cap = unknownCapability(err);
    if (cap === undefined || this.#unknown.has(cap)) return false;
    this.#unknown.add(cap);
    return true;
  }
}
