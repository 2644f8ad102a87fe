import { execFileSync } from 'node:child_process';
import { readFileSync, readdirSync } from 'node:fs';

/** Clock ticks per second for /proc/PID/stat times (100 on Linux almost everywhere). */
const CLK_TCK = (() => {
  try {
    const n = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim());
    return Number.isFinite(n) && n > 0 ? n : 100;
  } catch {
    return 100;
  }
})();

/**
 * user+system CPU seconds a process has used so far (`/proc/PID/stat` fields 14 and 15), or NaN
 * when the process is gone. Resolution is one clock tick (10 ms).
 */
export function cpuSecondsOf(pid: number | undefined): number {
  return cpuTimesOf(pid).self;
}

/**
 * A process's CPU seconds (`/proc/PID/stat` fields 14–17): `self` = its own user+system time,
 * `withChildren` = that plus the user+system time of every child it has waited for (cutime,
 * cstime; a child's own waited-for children included, as the kernel adds them up at each wait).
 * Both NaN when the process is gone.
 */
export function cpuTimesOf(pid: number | undefined): { self: number; withChildren: number } {
  if (pid === undefined) return { self: Number.NaN, withChildren: Number.NaN };
  try {
    return parseCpuTimes(readFileSync(`/proc/${pid}/stat`, 'utf8'), CLK_TCK);
  } catch {
    return { self: Number.NaN, withChildren: Number.NaN };
  }
}

/** `cpuTimesOf` of one `/proc/PID/stat` text, at `ticks` per second. */
export function parseCpuTimes(stat: string, ticks: number): { self: number; withChildren: number } {
  // The command name (field 2) may contain spaces and parentheses: split after the last ')'.
  const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const [utime, stime, cutime, cstime] = rest.slice(11, 15).map(Number) as [number, number, number, number];
  return { self: (utime + stime) / ticks, withChildren: (utime + stime + cutime + cstime) / ticks };
}

/** This process's own user+system CPU seconds. */
export function selfCpuSeconds(): number {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1e6;
}

/** The PID of the `containerd-shim*` process that serves container `id` (its exec'd processes), if visible. */
export function findShimPid(containerId: string): number | undefined {
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    let cmdline: string;
    try {
      cmdline = readFileSync(`/proc/${entry}/cmdline`, 'utf8');
    } catch {
      continue;
    }
    const argv = cmdline.split('\0');
    if (!argv[0]?.includes('containerd-shim')) continue;
    const i = argv.indexOf('-id');
    if (i >= 0 && argv[i + 1] === containerId) return Number(entry);
  }
  return undefined;
}

/** CPU seconds all CPUs spent busy (not idle, not iowait) since boot, from /proc/stat. */
export function systemBusySeconds(): number {
  try {
    const line = readFileSync('/proc/stat', 'utf8').split('\n', 1)[0]!;
    const f = line.trim().split(/\s+/).slice(1).map(Number);
    const total = f.slice(0, 8).reduce((a, b) => a + b, 0); // user nice system idle iowait irq softirq steal
    return (total - f[3]! - f[4]!) / CLK_TCK;
  } catch {
    return Number.NaN;
  }
}

/** A CPU meter over several processes: `start()` then `stop()` gives the CPU-s each used in between. */
export class CpuMeter {
  readonly #pids: Readonly<Record<string, number | undefined>>;

  constructor(pids: Readonly<Record<string, number | undefined>>) {
    this.#pids = pids;
  }

  start(): () => Record<string, number> {
    const before = this.#sample();
    return () => {
      const after = this.#sample();
      const out: Record<string, number> = {};
      for (const k of Object.keys(before)) out[k] = after[k]! - before[k]!;
      // Everything else that ran meanwhile: the exec'd dd/cat, containerd, the CLI, other workloads.
      let known = 0;
      for (const k of Object.keys(out)) if (k !== 'system' && Number.isFinite(out[k])) known += out[k]!;
      out.rest = out.system! - known;
      return out;
    };
  }

  #sample(): Record<string, number> {
    const out: Record<string, number> = { client: selfCpuSeconds(), system: systemBusySeconds() };
    for (const [name, pid] of Object.entries(this.#pids)) out[name] = cpuSecondsOf(pid);
    return out;
  }
}
