/**
 * How many forwarded connections may be open at once. Each one is a `nsenter … socat` child with
 * three pipes in nodelet, so without a bound a single client holding connections runs nodelet out
 * of file descriptors (and then everything else it serves fails too).
 */

import { CountingSlots } from '../slots.js';


/** The node-wide count of forwarded connections, shared by every session and wire form. */
export class ForwardLimiter extends CountingSlots {}

/** What a refused connection's error stream (or channel) says; kubectl prints it as the reason. */
export function tooManyPerSession(max: number): string {
  return `too many forwarded connections in this port-forward session (limit ${max}); close some and retry`;
}

export function tooManyOnNode(max: number): string {
  return `too many forwarded connections on this node (limit ${max}); retry later`;
}
