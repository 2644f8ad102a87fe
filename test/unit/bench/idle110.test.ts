import t from 'tap';
import { leastSquaresSlope } from '../../../bench/lib/idle110.js';

t.test('the slope of points on a line is the line\'s', async (t) => {
  const xs = [0, 0.5, 1, 1.5, 2];
  t.equal(leastSquaresSlope(xs, xs.map((x) => 100_000 + 250 * x)), 250);
  t.equal(leastSquaresSlope(xs, xs.map((x) => 100_000 - 40 * x)), -40);
  t.equal(leastSquaresSlope(xs, xs.map(() => 7)), 0, 'flat');
});

t.test('noise around a line: the fit, not the end points', async (t) => {
  // A sawtooth (+3, -3, …) on a rising line: end to end gives 1.5/min more than the fit.
  const xs = [0, 1, 2, 3, 4, 5];
  const ys = xs.map((x, i) => 10 * x + (i % 2 === 0 ? 3 : -3));
  t.ok(Math.abs(leastSquaresSlope(xs, ys) - 10) < 1.5, `slope ${leastSquaresSlope(xs, ys)} near 10`);
  t.not((ys.at(-1)! - ys[0]!) / 5, 10, 'end to end differs');
});

t.test('fewer than two distinct x: no slope', async (t) => {
  t.ok(Number.isNaN(leastSquaresSlope([], [])));
  t.ok(Number.isNaN(leastSquaresSlope([1], [5])));
  t.ok(Number.isNaN(leastSquaresSlope([2, 2, 2], [1, 2, 3])));
});
