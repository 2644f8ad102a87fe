import type { Writable } from 'node:stream';
import type Docker from 'dockerode';
import { notImplemented } from '../../api/errors.js';
import type { LogOptions } from '../../streaming/types.js';

/** Container logs through Docker's logs API (issue #4). */
export async function containerLogs(_docker: Docker, _id: string, _opts: LogOptions, _out: Writable, _signal: AbortSignal): Promise<void> {
  throw notImplemented('container logs are not implemented yet');
}
