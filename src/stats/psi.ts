import type { PSIData, PSIStats } from './types.js';

/**
 * Pressure stall information (the kubelet's `KubeletPSI`, beta and on by default since 1.34):
 * the `cpu`, `memory` and `io` pressure files, `some` and `full` lines of
 * `avg10=… avg60=… avg300=… total=…`. The kubelet takes them from cadvisor, which keeps runc's
 * parse of the file (`total` unchanged, the kernel's microseconds); this does the same.
 */

export type PressureResource = 'cpu' | 'memory' | 'io';

/** The three pressures of one cgroup or of the node; a resource whose file could not be read is left out. */
export type PressureReading = Partial<Record<PressureResource, PSIStats>>;

const zero = (): PSIData => ({ total: 0, avg10: 0, avg60: 0, avg300: 0 });

/**
 * Parses a pressure file. A missing line stays zero (the Go zero value: older kernels have no
 * `full` line for cpu); a malformed file throws, naming the line.
 */
export function parsePressure(text: string): PSIStats {
  const out: PSIStats = { some: zero(), full: zero() };
  let seen = 0;
  for (const line of text.split('\n')) {
    if (line.trim() === '') continue;
    const m = /^(some|full)\s+avg10=([\d.]+)\s+avg60=([\d.]+)\s+avg300=([\d.]+)\s+total=(\d+)\s*$/.exec(line);
    if (!m) throw new Error(`unexpected pressure line ${JSON.stringify(line)}`);
    out[m[1] as 'some' | 'full'] = { avg10: Number(m[2]), avg60: Number(m[3]), avg300: Number(m[4]), total: Number(m[5]) };
    seen++;
  }
  if (seen === 0) throw new Error('empty pressure file');
  return out;
}

/** Reads `<resource>` pressure through `pathOf`; each file that is missing or malformed is left out. */
export async function readPressure(read: (path: string) => Promise<string>, pathOf: (resource: PressureResource) => string): Promise<PressureReading> {
  const out: PressureReading = {};
  await Promise.all((['cpu', 'memory', 'io'] as const).map(async (r) => {
    try {
      out[r] = parsePressure(await read(pathOf(r)));
    } catch {
      // No PSI in this kernel (or disabled with psi=0): the field stays unset, as the kubelet's nil.
    }
  }));
  return out;
}
