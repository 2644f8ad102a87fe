import t from 'tap';
import { svgChart, target, verdictOf, type Metric } from '../../../bench/lib/report.js';

const m = (metric: string, value: number, baseline: number): Metric => ({ metric, variant: 'nodelet', value, unit: 'MB/s', baseline, baseline_variant: 'kubelet', ratio: value / baseline, min: value, max: value, rounds: 1 });

t.test("the chart draws the kubelet part's kubectl throughputs beside the kubelet's, the target at 1.0×", async (t) => {
  const svg = svgChart([m('vs_kubelet_exec_stdout_throughput', 96, 58), m('vs_kubelet_port_forward_throughput', 147, 188)], 'x');
  t.match(svg, /kubectl exec stdout \(MB\/s\)/);
  t.match(svg, /kubectl port-forward \(MB\/s\)/);
  t.equal(svg.match(/>the kubelet</g)?.length, 2, "one baseline bar per figure: the kubelet's");
  t.match(svg, /fill="#1e8e3e"\/>\s*<text[^>]*>96 \(1\.66×\)/, 'faster than the kubelet: green');
  t.match(svg, /fill="#d93025"\/>\s*<text[^>]*>147 \(0\.78×\)/, 'slower: red');
  t.equal(svg.match(/stroke-dasharray/g)?.length, 2, 'a target line per figure');
  t.equal(svgChart([], 'x'), '', 'nothing to draw');
});

t.test('a verdict holds only when the whole spread over rounds is on one side of the target', async (t) => {
  t.equal(target(0.85, '>=', 'ratio', 0.91, { min: 0.69, max: 1.18 }).verdict, 'UNSETTLED', 'median passes, spread straddles: no verdict');
  t.equal(target(0.85, '>=', 'ratio', 0.91, { min: 0.69, max: 1.18 }).pass, true, 'pass still judges the median');
  t.equal(target(0.85, '>=', 'ratio', 0.9, { min: 0.86, max: 0.95 }).verdict, 'PASS');
  t.equal(target(0.8, '>=', 'ratio', 0.63, { min: 0.55, max: 0.79 }).verdict, 'MISS');
  t.equal(target(2, '<=', 'value', 3.8, { min: 1.1, max: 5 }).verdict, 'UNSETTLED');
  t.equal(target(2, '<=', 'value', 1.5, undefined).verdict, 'PASS', 'one round: the value decides');
  t.equal(verdictOf({ ...m('x', 1, 1), ...target(1, '>=', 'ratio', 1, { min: 0.9, max: 1.1 }) }), 'UNSETTLED');
});
