import t from 'tap';
import { parseJUnit, perSig, render, sigOf, summarize, type SkipEntry } from '../../conformance/report.mjs';

/**
 * The conformance run's summary (test/conformance/report.mjs): totals, the per-SIG table the full
 * `[Conformance]` run reports, and the skip list applied — from a JUnit report shaped as ginkgo
 * writes it.
 */

const junit = `<?xml version="1.0" encoding="UTF-8"?>
<testsuites><testsuite name="Kubernetes e2e suite">
  <testcase name="[SynchronizedBeforeSuite]" status="passed" time="1"></testcase>
  <testcase name="[It] [sig-node] Pods should get a host IP [NodeConformance] [Conformance]" status="passed" time="3.5"></testcase>
  <testcase name="[It] [sig-apps] Deployment should run the lifecycle of a Deployment [Conformance]" status="failed" time="301">
    <failure message="timed out">[FAILED] timed out waiting for the condition
In [It] at: deployment.go:1</failure></testcase>
  <testcase name="[It] [sig-apps] ReplicaSet should serve a basic image on each replica [Conformance]" status="passed" time="20"></testcase>
  <testcase name="[It] [sig-node] Privileged pod should run privileged [NodeConformance] [Conformance]" status="skipped" time="0"><skipped message="skipped"/></testcase>
  <testcase name="[It] [sig-storage] not a conformance spec" status="failed" time="1"><failure message="x">x</failure></testcase>
</testsuite></testsuites>`;

const skips: SkipEntry[] = [{ spec: 'Privileged pod', category: 'host', reason: 'privileged', re: /Privileged pod/ }];

t.test('sigOf reads the leading [sig-…] label', async (t) => {
  t.equal(sigOf('[sig-api-machinery] Watchers should observe'), 'sig-api-machinery');
  t.equal(sigOf('[sig-node] Pods'), 'sig-node');
  t.equal(sigOf('Pods without a label'), 'other');
});

t.test('the full suite: only [Conformance] specs count, per SIG', async (t) => {
  const result = summarize(parseJUnit(junit), skips, '\\[Conformance\\]');
  t.equal(result.rows.length, 4, 'the non-conformance spec and the suite nodes are left out');
  t.same(perSig(result.rows), [
    { sig: 'sig-apps', passed: 1, failed: 1, skipped: 0, total: 2 },
    { sig: 'sig-node', passed: 1, failed: 0, skipped: 1, total: 2 },
  ]);
  const { text, failed } = render(result, { date: '2026-12-03', junit: 'junit_01.xml', focus: '\\[Conformance\\]' });
  t.equal(failed, true, 'a failed spec fails the run');
  t.match(text, /^# \[Conformance\] against nodelet/);
  t.match(text, /\| sig-apps \| 1 \| 1 \| 0 \| 2 \|/);
  t.match(text, /\| passed of all \| 50\.0 % \|/);
  t.match(text, /\| pass rate of the specs that ran \| 66\.7 % \|/);
  t.match(text, /Deployment should run the lifecycle .*\| failed \| 301\.0 \| timed out waiting for the condition/);
  t.match(text, /Privileged pod .*\| skipped \| .* skip list \(host\): privileged/);
});

t.test('the default suite is [NodeConformance]', async (t) => {
  const result = summarize(parseJUnit(junit), skips, '\\[NodeConformance\\]');
  t.equal(result.rows.length, 2);
  const { text, failed } = render(result, { date: 'd', junit: 'j' });
  t.equal(failed, false, 'nothing outside the skip list failed');
  t.match(text, /^# \[NodeConformance\] against nodelet/);
});
