import t from 'tap';
import { mock } from 'node:test';
import { IdleSweep, type IdleMember } from '../../../../src/streaming/websocket/idle.js';

/** A member idle since `last`, timing out `timeoutMs` after it; records when it expired. */
class Member implements IdleMember {
  last = Date.now();
  expiredAt: number | undefined;
  constructor(readonly timeoutMs: number) {}
  idleDeadline(): number {
    return this.last + this.timeoutMs;
  }
  idleExpired(): void {
    t.equal(this.expiredAt, undefined, 'expired once');
    this.expiredAt = Date.now();
  }
}

t.test('each member expires at its own deadline, activity pushing it later, on one timer', async (t) => {
  mock.timers.enable({ apis: ['setTimeout', 'Date'] });
  t.teardown(() => mock.timers.reset());
  const sweep = new IdleSweep();
  const short = new Member(100);
  const long = new Member(250);
  const active = new Member(100);
  sweep.add(short);
  sweep.add(long);
  sweep.add(active);
  for (let i = 0; i < 6; i++) {
    mock.timers.tick(50);
    active.last = Date.now();
  }
  // 300 ms in: `short` expired at 100, `long` at 250; `active` was touched every 50 ms.
  t.equal(short.expiredAt, 100);
  t.equal(long.expiredAt, 250);
  t.equal(active.expiredAt, undefined, 'activity kept it alive');
  t.equal(sweep.size, 1, 'expired members are removed');
  mock.timers.tick(99);
  t.equal(active.expiredAt, undefined, 'not before its deadline');
  mock.timers.tick(1);
  t.equal(active.expiredAt, 400, '100 ms after its last activity');
  t.equal(sweep.size, 0);
});

t.test('a deleted member never expires; a member added with an earlier deadline re-arms the timer', async (t) => {
  mock.timers.enable({ apis: ['setTimeout', 'Date'] });
  t.teardown(() => mock.timers.reset());
  const sweep = new IdleSweep();
  const gone = new Member(50);
  const late = new Member(1000);
  sweep.add(late);
  sweep.add(gone);
  sweep.delete(gone);
  const early = new Member(30);
  sweep.add(early);
  mock.timers.tick(30);
  t.equal(early.expiredAt, 30, 'the earlier deadline was armed');
  mock.timers.tick(970);
  t.equal(gone.expiredAt, undefined, 'deleted before its deadline');
  t.equal(late.expiredAt, 1000);
});
