import type { Duplex } from 'node:stream';
import type Docker from 'dockerode';
import { notImplemented } from '../../api/errors.js';
import type { Logger } from '../../logging/index.js';

/** Port-forward into the sandbox's network namespace (issue #4). */
export async function forwardPort(_docker: Docker, _sandboxId: string, _port: number, _stream: Duplex, _signal: AbortSignal, _log: Logger): Promise<void> {
  throw notImplemented('port-forward is not implemented yet');
}
