import t from 'tap';
import { nextRotationDeadline } from '../../../src/certificate/deadline.js';

t.test('the rotation deadline is 70–90 % of the validity from notBefore, jittered', async (t) => {
  const notBefore = new Date('2026-12-01T00:00:00Z');
  const notAfter = new Date('2026-12-11T00:00:00Z'); // 10 days
  const day = 24 * 3600_000;
  t.equal(nextRotationDeadline(notBefore, notAfter, 0).getTime(), notBefore.getTime() + 7 * day, 'random 0: 70 %');
  t.equal(nextRotationDeadline(notBefore, notAfter, 0.5).getTime(), notBefore.getTime() + 8 * day, 'random 0.5: 80 %');
  t.equal(nextRotationDeadline(notBefore, notAfter, 1).getTime(), notBefore.getTime() + 9 * day, 'random 1: 90 %');
  for (let i = 0; i < 200; i++) {
    const d = nextRotationDeadline(notBefore, notAfter).getTime();
    if (d < notBefore.getTime() + 7 * day || d > notBefore.getTime() + 9 * day) t.fail(`out of range: ${new Date(d).toISOString()}`);
  }
  t.equal(nextRotationDeadline(notBefore, notAfter, 7).getTime(), notBefore.getTime() + 9 * day, 'random clamped');
  t.equal(nextRotationDeadline(notAfter, notBefore, 0.5).getTime(), notAfter.getTime(), 'an inverted validity: at once (its notBefore)');
});

t.test('a short-lived certificate: 10 min signed, backdated 5 min, renews 10.5–13.5 min after its notBefore, 5.5–8.5 min after issue', async (t) => {
  const notBefore = new Date('2026-12-01T00:00:00Z');
  const notAfter = new Date(notBefore.getTime() + 15 * 60_000);
  t.equal(nextRotationDeadline(notBefore, notAfter, 0).getTime() - notBefore.getTime(), 10.5 * 60_000);
  t.equal(nextRotationDeadline(notBefore, notAfter, 1).getTime() - notBefore.getTime(), 13.5 * 60_000);
});
