/**
 * The bench's report: the metric shape every part returns, the targets, text tables, the
 * markdown summary (the summary figures, in their order, ready for bench/README.md) and the chart
 * (`bench/results.svg`: each relay figure as a bar beside its direct baseline, and the kubelet
 * part's kubectl throughputs beside the kubelet's).
 */

/** One JSON line of `--json`, and one row's worth of a table. */
export interface Metric {
  metric: string;
  variant: string;
  value: number | null;
  unit: string;
  baseline: number | null;
  baseline_variant: string | null;
  ratio: number | null;
  min: number | null;
  max: number | null;
  rounds: number;
  target?: number;
  target_op?: '>=' | '<=';
  target_of?: 'ratio' | 'value';
  pass?: boolean;
  /** PASS or MISS only when the whole spread over rounds is on that side of the target; UNSETTLED when it straddles it. */
  verdict?: Verdict;
  [extra: string]: unknown;
}

export interface PartResult {
  metrics: Metric[];
  lines: string[];
}

/** The targets (the first ones were looser), in one place. */
export const TARGETS = {
  /** exec stdout throughput ÷ direct dockerode. */
  stdoutRatio: 0.85,
  /** exec stdin throughput ÷ direct. */
  stdinRatio: 0.8,
  /** nodelet CPU-seconds per GiB relayed, each of the four transfers. */
  cpuPerGiB: 1.2,
  /** Added setup latency to the first stdout byte, ms. */
  setupOverheadMs: 2,
  /** Port-forward throughput ÷ a client inside the pod's netns. */
  portForwardRatio: 0.7,
  /** `/pods` and `/podInfo` req/s ÷ a bare Fastify server sending the same bytes. */
  servingRatio: 0.9,
  /** `/podInfo` p50 with 1000 pods ÷ with 10. */
  podInfoFlat: 1.25,
  /** ms from `docker kill` to the status. */
  freshnessMs: 100,
  /** KiB of nodelet RSS per idle exec session, after a forced GC. */
  idleSessionKiB: 12,
  /** MiB of RSS growth under a slow reader. */
  slowReaderMiB: 64,
} as const;

export type Verdict = 'PASS' | 'MISS' | 'UNSETTLED';

/**
 * The target fields of a metric: `op` applied to `of` (the ratio or the value). `pass` judges the
 * median; `verdict` the spread over rounds (`spread`: the least and largest per-round value of
 * the same quantity), so a figure that flips between rounds is UNSETTLED, not a PASS or a MISS.
 */
export function target(target: number, op: '>=' | '<=', of: 'ratio' | 'value', actual: number | null, spread?: { min: number; max: number }): Pick<Metric, 'target' | 'target_op' | 'target_of' | 'pass' | 'verdict'> {
  const meets = (x: number | null): boolean => x !== null && Number.isFinite(x) && (op === '>=' ? x >= target : x <= target);
  const pass = meets(actual);
  let verdict: Verdict = pass ? 'PASS' : 'MISS';
  if (spread && Number.isFinite(spread.min) && Number.isFinite(spread.max)) {
    const low = meets(spread.min);
    const high = meets(spread.max);
    verdict = low && high ? 'PASS' : !low && !high ? 'MISS' : 'UNSETTLED';
  }
  return { target, target_op: op, target_of: of, pass, verdict };
}

/** PASS, MISS or UNSETTLED (the spread straddles the target); '' for a figure without a target. */
export const verdictOf = (m: Metric | undefined): string => (m?.target === undefined ? '' : (m.verdict ?? (m.pass ? 'PASS' : 'MISS')));

export const fmt = (x: number | null | undefined, digits = 2): string => (x === null || x === undefined || !Number.isFinite(x) ? '–' : x.toFixed(digits));

export function verdict(m: Metric): string {
  if (m.target === undefined) return '';
  return `${m.target_op} ${m.target}${m.target_of === 'ratio' ? '×' : ''} ${verdictOf(m)}`;
}

/** Aligned text columns: the first left-aligned, the others right-aligned. */
export function table(rows: string[][]): string {
  const widths = rows[0]!.map((_, c) => Math.max(...rows.map((r) => (r[c] ?? '').length)));
  return rows.map((r) => r.map((cell, c) => (c === 0 ? cell.padEnd(widths[c]!) : cell.padStart(widths[c]!))).join('  ')).join('\n');
}

// ---- markdown summary --------------------------------------------------------------------------

const find = (ms: readonly Metric[], metric: string, variant?: string): Metric | undefined =>
  ms.find((m) => m.metric === metric && (variant === undefined || m.variant === variant));

const passText = verdictOf;
const num = (x: unknown): number | null => (typeof x === 'number' ? x : null);

interface SummaryRow {
  figure: string;
  /** Cell text per transport column; '' when the figure has no such variant. */
  cells: [string, string];
  baseline: string;
  target: string;
  result: string;
}

/**
 * The summary table as markdown: every figure beside its baseline from the same run, with the
 * target and PASS/MISS. Figures whose part did not run are left out.
 */
export function markdownSummary(ms: readonly Metric[]): string {
  const rows: SummaryRow[] = [];
  const both = (metric: string): [Metric | undefined, Metric | undefined] => [find(ms, metric, 'websocket'), find(ms, metric, 'spdy')];
  const results = (...xs: (Metric | undefined)[]): string => xs.filter((m) => m?.target !== undefined).map(passText).join(' / ');

  for (const kind of ['stdout', 'stdin'] as const) {
    const [ws, spdy] = both(`exec_${kind}_throughput`);
    if (ws || spdy) {
      const cell = (m: Metric | undefined) => (m ? `${fmt(m.ratio)}× (${fmt(m.value, 0)} MB/s)` : '');
      rows.push({ figure: `exec ${kind} ÷ direct dockerode`, cells: [cell(ws), cell(spdy)], baseline: `direct ${fmt((ws ?? spdy)!.baseline, 0)} MB/s`, target: `≥ ${TARGETS[kind === 'stdout' ? 'stdoutRatio' : 'stdinRatio']}×`, result: results(ws, spdy) });
    }
    const [cws, cspdy] = both(`exec_${kind}_server_cpu`);
    if (cws || cspdy) {
      const cell = (m: Metric | undefined) => (m ? `${fmt(m.value)} (${fmt(num(m.nodelet_full_gcs), 0)} full GCs)` : '');
      rows.push({ figure: `nodelet CPU-s per GiB, ${kind}`, cells: [cell(cws), cell(cspdy)], baseline: `direct consumer ${fmt((cws ?? cspdy)!.baseline)}`, target: `≤ ${TARGETS.cpuPerGiB}`, result: results(cws, cspdy) });
    }
  }
  const [sws, sspdy] = both('exec_setup_overhead');
  if (sws || sspdy) {
    const cell = (m: Metric | undefined) => (m ? `${(m.value ?? 0) >= 0 ? '+' : ''}${fmt(m.value, 1)} ms` : '');
    rows.push({ figure: 'setup overhead, first byte', cells: [cell(sws), cell(sspdy)], baseline: `direct ${fmt((sws ?? sspdy)!.baseline, 1)} ms`, target: `≤ +${TARGETS.setupOverheadMs} ms`, result: results(sws, sspdy) });
  }
  const pf = find(ms, 'portforward_throughput');
  if (pf) rows.push({ figure: 'port-forward ÷ a client inside the pod netns', cells: ['', `${fmt(pf.ratio)}× (${fmt(pf.value, 0)} MB/s)`], baseline: `${fmt(pf.baseline, 0)} MB/s`, target: `≥ ${TARGETS.portForwardRatio}×`, result: passText(pf) });
  for (const [metric, label] of [['http_pods_rps', '`/pods` (110 pods) ÷ bare Fastify, same bytes'], ['http_podinfo_rps', '`/podInfo` ÷ bare Fastify, same bytes']] as const) {
    const m = find(ms, metric);
    if (m) rows.push({ figure: label, cells: [`${fmt(m.ratio)}× (${fmt(m.value, 0)} req/s)`, ''], baseline: `${fmt(m.baseline, 0)} req/s`, target: `≥ ${TARGETS.servingRatio}×`, result: passText(m) });
  }
  const idle = find(ms, 'idle_exec_session_rss');
  if (idle) {
    rows.push({
      figure: `RSS per idle exec session, ${String(idle.sessions)} open, after a forced GC`,
      cells: [`${fmt(idle.value, 1)} KiB (heap+external ${fmt(num(idle.heap_kib_per_session), 1)} KiB)`, ''],
      baseline: `RSS before ${fmt(idle.baseline, 1)} MiB`,
      target: `≤ ${TARGETS.idleSessionKiB} KiB`,
      result: passText(idle),
    });
  }
  const scale = find(ms, 'scale_exec_session_rss');
  const health = find(ms, 'scale_healthz_latency');
  if (scale) {
    rows.push({
      figure: `${String(scale.sessions)} idle exec sessions: memory per session, after a forced GC`,
      cells: [`${fmt(scale.value, 1)} KiB (heap+external ${fmt(num(scale.heap_kib_per_session), 1)} KiB)`, ''],
      baseline: `RSS before ${fmt(scale.baseline, 1)} MiB`,
      target: 'none (the figure alone is asked for)',
      result: '',
    });
  }
  if (health) {
    rows.push({
      figure: `\`/healthz\` latency with ${String(health.sessions)} sessions open, p50 / p99`,
      cells: [`${fmt(health.value, 2)} / ${fmt(num(health.p99_ms), 2)} ms`, ''],
      baseline: `no sessions: ${fmt(health.baseline, 2)} / ${fmt(num(health.baseline_p99_ms), 2)} ms`,
      target: 'none',
      result: '',
    });
  }
  if (rows.length === 0) return '';
  const lines = ['| figure | WebSocket | SPDY | baseline (same run) | target | result |', '|---|---|---|---|---|---|'];
  for (const r of rows) lines.push(`| ${r.figure} | ${r.cells[0]} | ${r.cells[1]} | ${r.baseline} | ${r.target} | ${r.result} |`);
  return lines.join('\n');
}

// ---- chart -------------------------------------------------------------------------------------

interface Bar {
  group: string;
  label: string;
  value: number;
  /** The baseline bar of its group. */
  baseline: boolean;
  pass?: boolean;
}

const esc = (s: string): string => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

/** Relay figures with their baselines, as bars (throughput; higher is better). */
function chartBars(ms: readonly Metric[]): { bars: Bar[]; targets: Map<string, number> } {
  const bars: Bar[] = [];
  const targets = new Map<string, number>();
  const add = (group: string, baselineLabel: string, unit: string, relays: Metric[]) => {
    const first = relays[0];
    if (!first || first.baseline === null) return;
    bars.push({ group: `${group} (${unit})`, label: baselineLabel, value: first.baseline, baseline: true });
    for (const m of relays) {
      if (m.value === null) continue;
      bars.push({ group: `${group} (${unit})`, label: `nodelet ${m.variant}`, value: m.value, baseline: false, ...(m.pass !== undefined ? { pass: m.pass } : {}) });
    }
    if (first.target !== undefined && first.target_of === 'ratio') targets.set(`${group} (${unit})`, first.target * first.baseline);
  };
  const relays = (metric: string) => ms.filter((m) => m.metric === metric);
  add('exec stdout', 'direct dockerode', 'MB/s', relays('exec_stdout_throughput').filter((m) => m.variant === 'websocket' || m.variant === 'spdy'));
  add('exec stdin', 'direct dockerode', 'MB/s', relays('exec_stdin_throughput').filter((m) => m.variant === 'websocket' || m.variant === 'spdy'));
  add('port-forward', 'client in the pod netns', 'MB/s', relays('portforward_throughput'));
  add('/pods, 110 pods', 'bare Fastify', 'req/s', relays('http_pods_rps'));
  add('/podInfo', 'bare Fastify', 'req/s', relays('http_podinfo_rps'));
  // The kubelet part's throughputs: the kubelet's figure is the baseline, the target 1.0× of it.
  const vsKubelet = (metric: string) => relays(metric).map((m) => ({ ...m, variant: 'via the apiserver', target: 1, target_of: 'ratio' as const, pass: m.ratio !== null && m.ratio >= 1 }));
  add('kubectl exec stdout', 'the kubelet', 'MB/s', vsKubelet('vs_kubelet_exec_stdout_throughput'));
  add('kubectl exec stdin', 'the kubelet', 'MB/s', vsKubelet('vs_kubelet_exec_stdin_throughput'));
  add('kubectl logs', 'the kubelet', 'MB/s', vsKubelet('vs_kubelet_logs_throughput'));
  add('kubectl port-forward', 'the kubelet', 'MB/s', vsKubelet('vs_kubelet_port_forward_throughput'));
  return { bars, targets };
}

/**
 * A horizontal bar chart, one group per relay figure: the baseline bar (grey) and nodelet's
 * bars (green PASS, red MISS), each group scaled to its own largest bar, the target as a dashed
 * line. Plain SVG text; '' when there is nothing to draw.
 */
export function svgChart(ms: readonly Metric[], title: string): string {
  const { bars, targets } = chartBars(ms);
  if (bars.length === 0) return '';
  const W = 760;
  const left = 190;
  const barW = W - left - 110;
  const barH = 18;
  const out: string[] = [];
  let y = 44;
  const groups = [...new Set(bars.map((b) => b.group))];
  for (const g of groups) {
    const gb = bars.filter((b) => b.group === g);
    const max = Math.max(...gb.map((b) => b.value), targets.get(g) ?? 0);
    out.push(`<text x="10" y="${y + 12}" class="g">${esc(g)}</text>`);
    y += 20;
    const top = y;
    for (const b of gb) {
      const w = max > 0 ? (b.value / max) * barW : 0;
      const fill = b.baseline ? '#9aa0a6' : b.pass === false ? '#d93025' : '#1e8e3e';
      const ratio = gb[0]!.baseline && !b.baseline ? ` (${(b.value / gb[0]!.value).toFixed(2)}×)` : '';
      out.push(
        `<text x="${left - 8}" y="${y + 13}" text-anchor="end">${esc(b.label)}</text>`,
        `<rect x="${left}" y="${y}" width="${w.toFixed(1)}" height="${barH}" fill="${fill}"/>`,
        `<text x="${(left + w + 6).toFixed(1)}" y="${y + 13}">${esc(fmt(b.value, 0) + ratio)}</text>`,
      );
      y += barH + 4;
    }
    const t = targets.get(g);
    if (t !== undefined && max > 0) {
      const x = left + (t / max) * barW;
      out.push(`<line x1="${x.toFixed(1)}" y1="${top - 3}" x2="${x.toFixed(1)}" y2="${y - 1}" stroke="#202124" stroke-dasharray="4 3"/>`);
    }
    y += 14;
  }
  const legend = `<text x="10" y="${y + 8}" class="l">grey: baseline in the same run · green: nodelet, target met · red: target missed · dashed: the target</text>`;
  const H = y + 20;
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" font-family="sans-serif" font-size="12">`,
    '<style>.g{font-weight:bold}.l{fill:#5f6368;font-size:11px}.t{font-size:14px;font-weight:bold}</style>',
    `<rect width="${W}" height="${H}" fill="#fff"/>`,
    `<text x="10" y="22" class="t">${esc(title)}</text>`,
    ...out,
    legend,
    '</svg>',
    '',
  ].join('\n');
}
