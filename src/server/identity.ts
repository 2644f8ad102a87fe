import type { IncomingMessage } from 'node:http';
import { ANONYMOUS_USER } from '../auth/types.js';

const users = new WeakMap<IncomingMessage, string>();

/** Records who a request was authenticated as (security.ts, once per request). */
export function setRequestUser(raw: IncomingMessage, name: string): void {
  users.set(raw, name);
}

/** Who `raw` was authenticated as; `system:anonymous` when nobody was (anonymous, read-only port). */
export function requestUser(raw: IncomingMessage): string {
  return users.get(raw) ?? ANONYMOUS_USER;
}
