import type { FastifyInstance } from 'fastify';
import type { Host } from '../host.js';

/** Container logs: `/containerLogs/{ns}/{pod}/{container}` and `/api/v1/namespaces/{ns}/pods/{name}/log` (issue #4). */
export async function logsPlugin(_app: FastifyInstance, _opts: { host: Host }): Promise<void> {}
