#!/usr/bin/env node
// The conformance run's bookkeeping (scripts/conformance.sh), plain Node with no build step:
//
//   node test/conformance/report.mjs skip-regex SKIP.yaml
//       prints the ginkgo --skip regex: every entry's `spec` regex as (?:…), joined with |
//   node test/conformance/report.mjs summary JUNIT.xml SKIP.yaml [--focus RE] [--out FILE]
//       a Markdown summary of the specs matching the focus (default \[NodeConformance\]): totals,
//       the same per SIG (the spec's leading `[sig-…]`), then one row per spec (passed / failed /
//       skipped, and why), to FILE and stdout; exits 1 when a spec failed or the suite's own setup
//       failed.
import { readFileSync, writeFileSync } from 'node:fs';
import { parse } from 'yaml';

const CATEGORIES = ['registry', 'image', 'host', 'nodelet-gap'];

export function loadSkipList(file) {
  const doc = parse(readFileSync(file, 'utf8'));
  const entries = doc?.skips;
  if (!Array.isArray(entries) || entries.length === 0) throw new Error(`${file}: no skips list`);
  return entries.map((e, i) => {
    const where = `${file}: skips[${i}]`;
    if (typeof e?.spec !== 'string' || e.spec === '') throw new Error(`${where}: spec must be a regex string`);
    if (!CATEGORIES.includes(e.category)) throw new Error(`${where}: category must be one of ${CATEGORIES.join(', ')}`);
    if (typeof e.reason !== 'string' || e.reason.trim() === '') throw new Error(`${where}: a reason is required`);
    let re;
    try {
      re = new RegExp(e.spec);
    } catch (err) {
      throw new Error(`${where}: ${err.message}`);
    }
    return { spec: e.spec, re, category: e.category, reason: e.reason.trim() };
  });
}

const ENTITIES = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'" };
const unescape = (s) =>
  s.replace(/&(#x[0-9a-f]+|#[0-9]+|[a-z]+);/gi, (m, e) => {
    if (e[0] === '#') return String.fromCodePoint(e[1] === 'x' || e[1] === 'X' ? parseInt(e.slice(2), 16) : Number(e.slice(1)));
    return ENTITIES[e] ?? m;
  });

const attrs = (tag) => {
  const out = {};
  for (const m of tag.matchAll(/([\w:-]+)="([^"]*)"/g)) out[m[1]] = unescape(m[2]);
  return out;
};

/** Ginkgo's JUnit report: one entry per testcase with its status and failure/skip text. */
export function parseJUnit(xml) {
  const cases = [];
  for (const m of xml.matchAll(/<testcase\b([^>]*?)(\/>|>([\s\S]*?)<\/testcase>)/g)) {
    const a = attrs(m[1]);
    const body = m[3] ?? '';
    const failure = body.match(/<(failure|error)\b([^>]*?)(?:\/>|>([\s\S]*?)<\/\1>)/);
    const skipped = body.match(/<skipped\b([^>]*?)\/?>/);
    let status = a.status;
    if (!status) status = failure ? 'failed' : skipped ? 'skipped' : 'passed';
    cases.push({
      name: a.name ?? '',
      status,
      time: Number(a.time ?? 0),
      failure: failure ? unescape(failure[3] ?? attrs(failure[2]).message ?? '') : '',
      skipMessage: skipped ? (attrs(skipped[1]).message ?? '') : '',
    });
  }
  return cases;
}

const specName = (name) => name.replace(/^\[It\]\s*/, '');
/** The SIG a spec belongs to: its leading `[sig-…]` label (`other` without one). */
export const sigOf = (name) => /^\[(sig-[\w-]+)\]/.exec(name)?.[1] ?? 'other';
/** `\[Conformance\]` → `[Conformance]`: the focus as a title. */
const suiteTitle = (focus) => focus.replace(/\\/g, '');
const cell = (s) => s.replace(/\|/g, '\\|').replace(/\s+/g, ' ').trim();

/** The start of a failure's own text (ginkgo puts markers and the location around it). */
function failureLine(text) {
  const lines = text
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l && !/^\[(FAILED|PANICKED|TIMEDOUT|INTERRUPTED)\]$/.test(l) && !/^In \[/.test(l));
  let out = '';
  for (const l of lines) {
    out = out ? `${out} ${l}` : l;
    if (out.length >= 160) break;
  }
  out = out.replace(/^\[(FAILED|PANICKED|TIMEDOUT)\]\s*/, '');
  return out.length > 300 ? `${out.slice(0, 300)}…` : out;
}

export function summarize(cases, skips, focus) {
  const focusRe = new RegExp(focus);
  const rows = [];
  let setupFailed = [];
  for (const c of cases) {
    const name = specName(c.name);
    if (!c.name.startsWith('[It]')) {
      // Suite-level nodes ([SynchronizedBeforeSuite], [ReportAfterSuite]…): only their failures count.
      if (c.status === 'failed' || c.status === 'panicked' || c.status === 'timedout') setupFailed.push(c);
      continue;
    }
    if (!focusRe.test(name)) continue;
    const skip = skips.find((s) => s.re.test(name));
    let status = c.status;
    let why = '';
    if (status === 'passed') why = '';
    else if (status === 'skipped' || status === 'pending') {
      if (skip) {
        status = 'skipped';
        why = `skip list (${skip.category}): ${skip.reason}`;
      } else {
        status = 'skipped';
        why = `skipped by the suite: ${failureLine(c.skipMessage || c.failure) || 'no reason given'}`;
      }
    } else {
      status = 'failed';
      why = failureLine(c.failure);
    }
    rows.push({ name, status, why, time: c.time, category: skip?.category });
  }
  rows.sort((a, b) => a.name.localeCompare(b.name));
  return { rows, setupFailed };
}

/** Passed / failed / skipped / total per SIG, SIGs sorted by name. */
export function perSig(rows) {
  const sigs = new Map();
  for (const r of rows) {
    const sig = sigOf(r.name);
    const n = sigs.get(sig) ?? { sig, passed: 0, failed: 0, skipped: 0, total: 0 };
    n[r.status]++;
    n.total++;
    sigs.set(sig, n);
  }
  return [...sigs.values()].sort((a, b) => a.sig.localeCompare(b.sig));
}

export function render({ rows, setupFailed }, meta) {
  const count = (pred) => rows.filter(pred).length;
  const passed = count((r) => r.status === 'passed');
  const failed = count((r) => r.status === 'failed');
  const skippedList = count((r) => r.status === 'skipped' && r.category);
  const skippedSuite = count((r) => r.status === 'skipped' && !r.category);
  const ran = passed + failed;
  const out = [];
  out.push(`# ${suiteTitle(meta.focus ?? '\\[NodeConformance\\]')} against nodelet`, '');
  out.push(`${meta.date}; ${meta.junit}`, '');
  out.push('| result | specs |', '| --- | ---: |');
  out.push(`| passed | ${passed} |`);
  out.push(`| failed | ${failed} |`);
  out.push(`| skipped: skip list | ${skippedList} |`);
  for (const cat of CATEGORIES) {
    const n = count((r) => r.status === 'skipped' && r.category === cat);
    if (n) out.push(`| &nbsp;&nbsp;${cat} | ${n} |`);
  }
  out.push(`| skipped by the suite itself | ${skippedSuite} |`);
  out.push(`| total | ${rows.length} |`);
  out.push(`| pass rate of the specs that ran | ${ran ? ((100 * passed) / ran).toFixed(1) : '0.0'} % |`);
  out.push(`| passed of all | ${rows.length ? ((100 * passed) / rows.length).toFixed(1) : '0.0'} % |`, '');
  out.push('| SIG | passed | failed | skipped | total |', '| --- | ---: | ---: | ---: | ---: |');
  for (const n of perSig(rows)) out.push(`| ${n.sig} | ${n.passed} | ${n.failed} | ${n.skipped} | ${n.total} |`);
  out.push('');
  if (setupFailed.length) {
    out.push('## Suite setup failed', '');
    for (const c of setupFailed) out.push(`- ${cell(c.name)}: ${cell(failureLine(c.failure))}`);
    out.push('');
  }
  out.push('| spec | result | seconds | why |', '| --- | --- | ---: | --- |');
  const order = { failed: 0, passed: 1, skipped: 2 };
  for (const r of [...rows].sort((a, b) => order[a.status] - order[b.status] || a.name.localeCompare(b.name))) {
    out.push(`| ${cell(r.name)} | ${r.status} | ${r.time.toFixed(1)} | ${cell(r.why)} |`);
  }
  out.push('', `${passed} passed, ${failed} failed, ${skippedList + skippedSuite} skipped`);
  return { text: out.join('\n') + '\n', failed: failed > 0 || setupFailed.length > 0 || rows.length === 0 };
}

function main(argv) {
  const [cmd, ...rest] = argv;
  const opt = (name, dflt) => {
    const i = rest.indexOf(name);
    if (i < 0) return dflt;
    const v = rest[i + 1];
    rest.splice(i, 2);
    return v;
  };
  if (cmd === 'skip-regex') {
    const skips = loadSkipList(rest[0]);
    process.stdout.write(skips.map((s) => `(?:${s.spec})`).join('|') + '\n');
    return 0;
  }
  if (cmd === 'summary') {
    const focus = opt('--focus', '\\[NodeConformance\\]');
    const outFile = opt('--out', '');
    const [junit, skipFile] = rest;
    const skips = loadSkipList(skipFile);
    const result = summarize(parseJUnit(readFileSync(junit, 'utf8')), skips, focus);
    const { text, failed } = render(result, { date: new Date().toISOString().slice(0, 10), junit, focus });
    if (outFile) writeFileSync(outFile, text);
    process.stdout.write(text);
    return failed ? 1 : 0;
  }
  process.stderr.write('usage: report.mjs skip-regex SKIP.yaml | summary JUNIT.xml SKIP.yaml [--focus RE] [--out FILE]\n');
  return 2;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  try {
    process.exitCode = main(process.argv.slice(2));
  } catch (err) {
    process.stderr.write(`report.mjs: ${err.message}\n`);
    process.exitCode = 2;
  }
}
