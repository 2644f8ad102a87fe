import { readFileSync } from 'node:fs';

/**
 * Readings of another process from /proc that the soak suite and the bench both take (the bench
 * imports this file: test/ never imports bench/).
 */

/** Resident set size of `pid` in bytes (`VmRSS` of /proc/PID/status), NaN when it is gone. */
export function rssOf(pid: number | undefined): number {
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) * 1024 : Number.NaN;
  } catch {
    return Number.NaN;
  }
}
