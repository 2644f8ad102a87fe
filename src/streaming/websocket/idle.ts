/**
 * One timer for the idle timeouts of many connections. Each connection used to arm a Timeout of
 * its own (with its closure) and keep it for its whole life, hours for an idle exec; here a
 * connection is a member of a set, and a single timer waits for the earliest deadline.
 *
 * A member's deadline only moves later (activity pushes it), so the timer may fire before a
 * deadline that moved: the sweep then re-reads every deadline, expires the members whose deadline
 * passed, and waits for the earliest of the others. That is the per-connection timer's behaviour
 * (fire, re-check the idle time, re-arm for the rest) with one timer; a sweep costs one pass over
 * the members, and happens at most once per member deadline reached.
 */
export interface IdleMember {
  /** When the member times out, in `Date.now()` milliseconds. */
  idleDeadline(): number;
  /** Called once, when `Date.now()` reached the deadline; the member has been removed by then. */
  idleExpired(): void;
}

export class IdleSweep {
  readonly #members = new Set<IdleMember>();
  #timer: NodeJS.Timeout | undefined;
  /** When the timer fires (Infinity: no timer). */
  #due = Infinity;
  readonly #sweep = (): void => this.#sweepNow();

  get size(): number {
    return this.#members.size;
  }

  add(member: IdleMember): void {
    this.#members.add(member);
    this.#arm(member.idleDeadline());
  }

  delete(member: IdleMember): void {
    if (this.#members.delete(member) && this.#members.size === 0) this.#disarm();
  }

  #arm(at: number): void {
    if (at >= this.#due) return;
    this.#disarm();
    this.#due = at;
    this.#timer = setTimeout(this.#sweep, Math.max(0, at - Date.now()));
    // Like the per-connection timers: an idle session alone does not keep the process alive.
    this.#timer.unref();
  }

  #disarm(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#due = Infinity;
  }

  #sweepNow(): void {
    this.#timer = undefined;
    this.#due = Infinity;
    const now = Date.now();
    const expired: IdleMember[] = [];
    let next = Infinity;
    for (const member of this.#members) {
      const at = member.idleDeadline();
      if (at <= now) expired.push(member);
      else if (at < next) next = at;
    }
    for (const member of expired) this.#members.delete(member);
    if (next !== Infinity) this.#arm(next);
    for (const member of expired) member.idleExpired();
  }
}
