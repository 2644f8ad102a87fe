import type { FastifyInstance, RouteGenericInterface, RouteHandlerMethod } from 'fastify';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { MethodNotAllowedError } from './errors.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Set on the catch-all routes `getRoute` adds; they answer 405 and are not API surface. */
    methodNotAllowed?: boolean;
  }
}

export type Handler<RG extends RouteGenericInterface> = RouteHandlerMethod<Server, IncomingMessage, ServerResponse, RG>;

async function rejectMethod(): Promise<never> {
  throw new MethodNotAllowedError(['GET', 'HEAD']);
}

/**
 * Registers a read-only route: GET (Fastify adds HEAD), and every other method on the same path
 * answers 405 with `Allow` — the kubelet's `GETOnlyRestfulFilter` and go-restful's behaviour,
 * where Fastify alone would say 404. The 405 is raised in `onRequest` so it never depends on
 * the request body.
 */
export function getRoute<RG extends RouteGenericInterface = RouteGenericInterface>(
  app: FastifyInstance,
  url: string,
  handler: Handler<RG>,
): void {
  app.get<RG>(url, handler);
  app.route({
    method: app.supportedMethods.filter((m) => m !== 'GET' && m !== 'HEAD'),
    url,
    config: { methodNotAllowed: true },
    onRequest: rejectMethod,
    handler: rejectMethod,
  });
}
