import type { IncomingMessage } from 'node:http';
import { ANONYMOUS_USER } from '../auth/types.js';

const kUser = Symbol('nodelet.requestUser');
/** The user sits on the request itself: a property write per request, where a WeakMap entry costs a hash-table insert and GC bookkeeping. */
type Identified = IncomingMessage & { [kUser]?: string };

/** Records who a request was authenticated as (security.ts, once per request). */
export function setRequestUser(raw: IncomingMessage, name: string): void {
  (raw as Identified)[kUser] = name;
}

/** Who `raw` was authenticated as; `system:anonymous` when nobody was (anonymous, read-only port). */
export function requestUser(raw: IncomingMessage): string {
  return (raw as Identified)[kUser] ?? ANONYMOUS_USER;
}
