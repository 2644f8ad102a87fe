/**
 * How many container log streams (follow or not) are served at once. Each holds a client socket,
 * a Docker connection and their buffers for as long as the client keeps it open; a client that
 * never reads costs as much as one that does.
 */

import { CountingSlots } from '../slots.js';

/** `Retry-After` of the 429 beyond it: a log stream ends when its reader leaves, usually soon. */
export const LOG_STREAMS_RETRY_AFTER_SECONDS = 10;

export class LogStreamSlots extends CountingSlots {}
