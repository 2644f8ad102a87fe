import { Socket } from 'node:net';
import type { Duplex } from 'node:stream';

/**
 * `net.Socket`'s own timer field (lib/net.js `kTimeout`: null from the constructor, the Timeout of
 * the last `setTimeout(ms > 0)`). Found by its description on a socket with a timer, once.
 */
const kTimeout: symbol | undefined = (() => {
  const probe = new Socket();
  probe.setTimeout(60_000);
  const symbol = Object.getOwnPropertySymbols(probe).find((s) => s.description === 'timeout');
  probe.setTimeout(0);
  probe.destroy();
  return symbol;
})();

type TimedSocket = Duplex & { [k: symbol]: unknown; setTimeout?: (ms: number) => unknown };

/**
 * Stops a socket's inactivity timer for good, for a socket that serves a long-lived session (an
 * exec idles for hours under the session's own idle timeout). `setTimeout(0)` clears the timer
 * but Node keeps the cleared Timeout and its bound callback on the socket (lib/internal/
 * stream_base_commons.js `setStreamTimeout`): ≈ 0.2 KiB per socket for the session's length, so
 * the field is set back to its constructor's null, which every reader of it accepts
 * (`clearTimeout(null)`, `_unrefTimer`'s truthiness check). Sockets that are not `net.Socket`s
 * (tests' duplex pairs) only get `setTimeout(0)` when they have it.
 */
export function stopSocketTimer(socket: Duplex): void {
  const s = socket as TimedSocket;
  s.setTimeout?.(0);
  if (kTimeout !== undefined && s[kTimeout]) s[kTimeout] = null;
}
