import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { stringify as toYAML } from 'yaml';
import { StatusError } from '../../api/errors.js';
import { rfc3339 } from '../../api/time.js';
import { getRoute } from '../methods.js';

/**
 * The node's z-pages, as the kubelet serves them (pkg/kubelet/server/server.go): `/configz` (the
 * `KubeletConfiguration` in effect, always), `/flagz` and `/statusz` (ComponentFlagz and
 * ComponentStatusz, beta and on since 1.36; k8s.io/apiserver/pkg/server/{flagz,statusz}).
 * `/flagz` and `/statusz` answer plain text unless the `Accept` header asks for the structured
 * form by kind, group and version (`application/json;as=Flagz;v=v1beta1;g=config.k8s.io`, or
 * YAML); v1alpha1 still answers, with the deprecation `Warning`; anything else is 406.
 */
export interface ZPagesOptions {
  /** The component's name in headers and `metadata.name` (`kubelet`: what clients of a node expect). */
  readonly component: string;
  readonly configz: () => Record<string, unknown>;
  readonly flagz: () => Record<string, string>;
  readonly startedAt: Date;
  readonly binaryVersion: string;
  /** The top-level paths served, for `/statusz`'s `Paths`. */
  readonly paths: () => readonly string[];
}

const WARNING = 'Warning: This endpoint is not meant to be machine parseable, has no formatting compatibility guarantees and is for debugging purposes only.';
/** The apiserver picks one at random per response, so no client comes to parse it. */
const DELIMITERS = [':', ': ', '=', ' '];
const GROUP = 'config.k8s.io';
const VERSIONS = ['v1alpha1', 'v1beta1'];
/** `nonDebuggingEndpoints` of statusz.go: not listed. */
const NOT_DEBUGGING = new Set(['/apis', '/api', '/openid', '/openapi', '/.well-known']);

type Choice = { form: 'text' } | { form: 'json' | 'yaml'; version: string };

/**
 * The zpages negotiation (`NegotiateOutputMediaType` with the endpoints' restrictions): clauses by
 * falling quality; text for `text/plain`, `text/*` or `*\/*`; JSON or YAML only with `as=<kind>`,
 * `g=config.k8s.io` and a known `v`. Undefined: nothing acceptable.
 */
export function negotiateZPage(accept: string | undefined, kind: string): Choice | undefined {
  if (!accept || !accept.trim()) return { form: 'text' };
  const clauses = accept.split(',').map((raw, index) => {
    const [type = '', ...params] = raw.split(';').map((s) => s.trim());
    const p = new Map(params.map((kv) => {
      const eq = kv.indexOf('=');
      return [kv.slice(0, eq).trim().toLowerCase(), kv.slice(eq + 1).trim()] as const;
    }));
    const q = Number(p.get('q') ?? 1);
    return { type: type.toLowerCase(), p, q: Number.isFinite(q) ? q : 0, index };
  });
  clauses.sort((a, b) => b.q - a.q || a.index - b.index);
  for (const c of clauses) {
    if (c.q <= 0) continue;
    const as = c.p.get('as');
    if (as === undefined && (c.type === 'text/plain' || c.type === 'text/*' || c.type === '*/*')) return { form: 'text' };
    const form = c.type === 'application/json' ? 'json' : c.type === 'application/yaml' ? 'yaml' : undefined;
    const version = c.p.get('v') ?? '';
    if (form && as === kind && c.p.get('g') === GROUP && VERSIONS.includes(version)) return { form, version };
  }
  return undefined;
}

function notAcceptable(kind: string): StatusError {
  const types = ['text/plain', ...VERSIONS.flatMap((v) => [`application/json;as=${kind};v=${v};g=${GROUP}`, `application/yaml;as=${kind};v=${v};g=${GROUP}`])];
  return new StatusError('NotAcceptable', `only the following media types are accepted: ${types.join(', ')}`);
}

function sendZPage(request: FastifyRequest, reply: FastifyReply, kind: string, text: () => string, object: () => Record<string, unknown>): FastifyReply {
  const choice = negotiateZPage(request.headers.accept, kind);
  if (!choice) throw notAcceptable(kind);
  reply.header('x-content-type-options', 'nosniff');
  if (choice.form === 'text') return reply.type('text/plain; charset=utf-8').send(text());
  if (choice.version === 'v1alpha1') reply.header('warning', `299 - "This version of the ${kind.toLowerCase()} endpoint is deprecated. Please use a newer version."`);
  const body = { kind, apiVersion: `${GROUP}/${choice.version}`, ...object() };
  const type = `application/${choice.form};as=${kind};v=${choice.version};g=${GROUP}`;
  return reply.type(type).send(choice.form === 'json' ? JSON.stringify(body) : toYAML(body));
}

/** statusz.go `uptime`: `H hr MM min SS sec`. */
function uptime(since: Date): string {
  const s = Math.floor((Date.now() - since.getTime()) / 1000);
  return `${Math.floor(s / 3600)} hr ${String(Math.floor(s / 60) % 60).padStart(2, '0')} min ${String(s % 60).padStart(2, '0')} sec`;
}

const WEEKDAYS = ['Sun', 'Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat'];
const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];

/** Go's `time.UnixDate` layout in UTC: `Mon Jan  2 15:04:05 UTC 2006`. */
export function unixDate(d: Date): string {
  const two = (n: number) => String(n).padStart(2, '0');
  return `${WEEKDAYS[d.getUTCDay()]} ${MONTHS[d.getUTCMonth()]} ${String(d.getUTCDate()).padStart(2, ' ')} ${two(d.getUTCHours())}:${two(d.getUTCMinutes())}:${two(d.getUTCSeconds())} UTC ${d.getUTCFullYear()}`;
}

export async function zpagesPlugin(app: FastifyInstance, opts: ZPagesOptions): Promise<void> {
  getRoute(app, '/configz', async (_request, reply) => reply.type('application/json').send(JSON.stringify({ kubeletconfig: opts.configz() })));

  getRoute(app, '/flagz', async (request, reply) => sendZPage(request, reply, 'Flagz', () => {
    const d = DELIMITERS[Math.floor(Math.random() * DELIMITERS.length)] ?? '=';
    const flags = opts.flagz();
    return `\n${opts.component} flagz\n${WARNING}\n\n${Object.keys(flags).sort().map((k) => `${k}${d}${flags[k]}\n`).join('')}`;
  }, () => ({ metadata: { name: opts.component }, flags: opts.flagz() })));

  getRoute(app, '/statusz', async (request, reply) => {
    const paths = [...new Set(opts.paths())].filter((p) => !NOT_DEBUGGING.has(p)).sort();
    const goVersion = `none (Node.js ${process.version})`;
    return sendZPage(request, reply, 'Statusz', () => {
      const d = DELIMITERS[Math.floor(Math.random() * DELIMITERS.length)] ?? ':';
      return `\n${opts.component} statusz\n${WARNING}\n\nStarted${d} ${unixDate(opts.startedAt)}\nUp${d} ${uptime(opts.startedAt)}\nGo version${d} ${goVersion}\nBinary version${d} ${opts.binaryVersion}\n\nPaths${d} ${paths.join(' ')}\n`;
    }, () => ({
      metadata: { name: opts.component },
      startTime: rfc3339(opts.startedAt),
      uptimeSeconds: Math.floor((Date.now() - opts.startedAt.getTime()) / 1000),
      goVersion,
      binaryVersion: opts.binaryVersion,
      paths,
    }));
  });
}
