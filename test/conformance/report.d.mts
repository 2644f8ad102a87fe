// Types of report.mjs (plain Node, run by scripts/conformance.sh without a build step), for the
// unit test that imports it.
export interface JUnitCase {
  name: string;
  status: string;
  time: number;
  failure: string;
  skipMessage: string;
}
export interface SkipEntry {
  spec: string;
  category: string;
  reason: string;
  re: RegExp;
}
export interface Row {
  name: string;
  status: 'passed' | 'failed' | 'skipped';
  why: string;
  time: number;
  category?: string;
}
export interface Summary {
  rows: Row[];
  setupFailed: JUnitCase[];
}
export function loadSkipList(file: string): SkipEntry[];
export function parseJUnit(xml: string): JUnitCase[];
export function sigOf(name: string): string;
export function summarize(cases: JUnitCase[], skips: SkipEntry[], focus: string): Summary;
export function perSig(rows: Row[]): Array<{ sig: string; passed: number; failed: number; skipped: number; total: number }>;
export function render(summary: Summary, meta: { date: string; junit: string; focus?: string }): { text: string; failed: boolean };
