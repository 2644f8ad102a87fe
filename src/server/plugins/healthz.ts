import type { FastifyInstance, FastifyReply } from 'fastify';
import { pageNotFound } from '../errors.js';
import type { Host } from '../../host/index.js';
import { getRoute } from '../methods.js';
import { hasQuery, queryValues } from '../params.js';

/**
 * `/healthz` and `/healthz/<check>`, byte-compatible with k8s.io/apiserver/pkg/server/healthz
 * as the kubelet installs it (checks `ping`, `log`, `syncloop`):
 *  - all pass: `ok` (or, with `?verbose`, one `[+]name ok` line each and `healthz check passed`);
 *  - any fails: 500 listing every check, failures as `[-]name failed: reason withheld` (the
 *    endpoint is unauthenticated on 10255, so reasons go to the log only);
 *  - `/healthz/<name>`: `ok`, or 500 `internal server error: <reason>`;
 *  - `?exclude=name` skips a check.
 */

type Check = () => string | undefined;

function collectChecks(host: Host): Map<string, Check> {
  // ping and log are the apiserver's built-ins; the host may override log and adds syncloop etc.
  const checks = new Map<string, Check>([
    ['ping', () => undefined],
    ['log', () => undefined],
  ]);
  for (const [name, check] of Object.entries(host.healthChecks())) {
    if (name !== 'ping') checks.set(name, check);
  }
  return checks;
}

function run(check: Check): string | undefined {
  try {
    return check();
  } catch (err) {
    return err instanceof Error ? err.message : String(err);
  }
}

function sendText(reply: FastifyReply, code: number, body: string): FastifyReply {
  return reply.code(code).type('text/plain; charset=utf-8').header('x-content-type-options', 'nosniff').send(body);
}

export async function healthzPlugin(app: FastifyInstance, opts: { host: Host }): Promise<void> {
  const { host } = opts;

  getRoute(app, '/healthz', async (request, reply) => {
    const excluded = new Set(queryValues(request, 'exclude'));
    let out = '';
    const failed: string[] = [];
    for (const [name, check] of collectChecks(host)) {
      if (excluded.delete(name)) {
        out += `[+]${name} excluded: ok\n`;
        continue;
      }
      const reason = run(check);
      if (reason !== undefined) {
        out += `[-]${name} failed: reason withheld\n`;
        failed.push(`${name}: ${reason}`);
      } else {
        out += `[+]${name} ok\n`;
      }
    }
    if (excluded.size > 0) {
      out += `warn: some health checks cannot be excluded: no matches for ${[...excluded].sort().map((n) => `"${n}"`).join(',')}\n`;
    }
    if (failed.length > 0) {
      request.log.info({ failed }, 'healthz check failed');
      // Always verbose on failure; Go's http.Error appends the newline.
      return sendText(reply, 500, `${out}healthz check failed\n`);
    }
    return sendText(reply, 200, hasQuery(request, 'verbose') ? `${out}healthz check passed\n` : 'ok');
  });

  getRoute<{ Params: { check: string } }>(app, '/healthz/:check', async (request, reply) => {
    const check = collectChecks(host).get(request.params.check);
    if (!check) throw pageNotFound(); // as the mux 404s an unknown check
    const reason = run(check);
    if (reason !== undefined) return sendText(reply, 500, `internal server error: ${reason}\n`);
    return sendText(reply, 200, 'ok');
  });
}
