import type { FastifyInstance } from 'fastify';
import type { Host } from '../host.js';
import type { StreamingOptions } from './remote-command.js';

/** Port-forward: `/portForward/{ns}/{pod}[/{uid}]` and `/api/v1/namespaces/{ns}/pods/{name}/portforward` (issue #4). */
export async function portForwardPlugin(_app: FastifyInstance, _opts: { host: Host; streaming: StreamingOptions }): Promise<void> {}
