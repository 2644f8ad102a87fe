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

/**
 * Registers `handlers` by method on one path (GET also answers HEAD); every other method answers
 * 405 with an `Allow` header naming the methods that exist, as `getRoute` does for GET alone.
 */
export function methodRoutes<RG extends RouteGenericInterface = RouteGenericInterface>(
  app: FastifyInstance,
  url: string,
  handlers: { GET: Handler<RG>; DELETE?: Handler<RG> },
): void {
  app.get<RG>(url, handlers.GET);
  const allow = ['GET', 'HEAD'];
  if (handlers.DELETE) {
    app.delete<RG>(url, handlers.DELETE);
    allow.push('DELETE');
  }
  const refuse = async (): Promise<never> => {
    throw new MethodNotAllowedError(allow);
  };
  app.route({
    method: app.supportedMethods.filter((m) => !allow.includes(m)),
    url,
    config: { methodNotAllowed: true },
    onRequest: refuse,
    handler: refuse,
  });
}
