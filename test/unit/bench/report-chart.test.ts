import t from 'tap';
import { svgChart, type Metric } from '../../../bench/lib/report.js';

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
