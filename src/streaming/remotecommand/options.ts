import { badRequest } from '../../api/errors.js';
import type { StreamOptions } from '../types.js';

/** A query value as Fastify's querystring parser hands it over (repeated keys become arrays). */
export type QueryValue = string | string[] | undefined;
export type StreamQuery = Readonly<Record<string, QueryValue>>;

/**
 * Which URL family the request came in on:
 * - `kubelet`: `/exec|/attach/{ns}/{pod}[/{uid}]/{container}`, booleans `input`/`output`/`error`/`tty`
 *   where only the literal `1` is true (the kubelet's `remotecommand.NewOptions`). We ALSO accept the
 *   apiserver spelling `stdin`/`stdout`/`stderr` with `true`/`1` there, so kubectl/client-node style
 *   queries aimed straight at a kubelet path work (a deliberate leniency over the kubelet).
 * - `apiserver`: `/api/v1/namespaces/{ns}/pods/{pod}/exec|attach?container=…`, booleans
 *   `stdin`/`stdout`/`stderr`/`tty` with `true` or `1` (what kubectl and client-node send).
 */
export type QueryDialect = 'kubelet' | 'apiserver';

export interface ParsedStreamOptions extends StreamOptions {
  /** argv, one element per repeated `command` value; always `[]` for attach. */
  readonly command: string[];
  /** The `container` query value (apiserver paths); kubelet paths carry it in the URL instead. */
  readonly container?: string;
}

/** Argument limits: the kubelet validates none of this, we refuse before any upgrade or Docker call. */
export const MAX_ARGV_ELEMENTS = 1000;
export const MAX_ARGV_BYTES = 256 * 1024;

/** Go's `req.FormValue` semantics: the first value of a repeated key. */
function first(v: QueryValue): string | undefined {
  return Array.isArray(v) ? v[0] : v;
}

function all(v: QueryValue): string[] {
  if (v === undefined) return [];
  return Array.isArray(v) ? v : [v];
}

/** Kubelet spelling: only the literal `1` counts (`FormValue(x) == "1"`). */
const kubeletTrue = (v: QueryValue): boolean => first(v) === '1';
/** apiserver/client spelling: `true` (any case) or `1`. */
const apiTrue = (v: QueryValue): boolean => {
  const s = first(v)?.toLowerCase();
  return s === 'true' || s === '1';
};

/**
 * Parses exec/attach query options like the kubelet's `NewOptions` (plus the argv checks the kubelet
 * leaves to the runtime). Throws `StatusError` 400 on refusal.
 */
export function parseStreamOptions(query: StreamQuery, dialect: QueryDialect, kind: 'exec' | 'attach' = 'exec'): ParsedStreamOptions {
  const stdin = apiTrue(query.stdin) || (dialect === 'kubelet' && kubeletTrue(query.input));
  const stdout = apiTrue(query.stdout) || (dialect === 'kubelet' && kubeletTrue(query.output));
  let stderr = apiTrue(query.stderr) || (dialect === 'kubelet' && kubeletTrue(query.error));
  // `tty` is spelt the same in both dialects; `true` is accepted on kubelet paths too (see QueryDialect).
  const tty = apiTrue(query.tty);

  if (!stdin && !stdout && !stderr) throw badRequest('you must specify at least 1 of stdin, stdout, stderr');
  // A tty merges stderr into stdout: the kubelet drops stderr silently rather than failing (NewOptions).
  if (tty && stderr) stderr = false;

  const container = first(query.container);
  const command = kind === 'exec' ? validateCommand(all(query.command)) : [];
  return { stdin, stdout, stderr, tty, command, ...(container ? { container } : {}) };
}

function validateCommand(argv: string[]): string[] {
  // An empty argv[0] can never be executed; refuse it like a missing command instead of letting Docker fail.
  if (argv.length === 0 || argv[0] === '') throw badRequest('you must specify a command');
  if (argv.length > MAX_ARGV_ELEMENTS) {
    throw badRequest(`command has too many arguments: ${argv.length} (at most ${MAX_ARGV_ELEMENTS})`);
  }
  let bytes = 0;
  for (const arg of argv) {
    if (arg.includes('\0')) throw badRequest('command arguments must not contain NUL bytes');
    bytes += Buffer.byteLength(arg, 'utf8');
  }
  if (bytes > MAX_ARGV_BYTES) throw badRequest(`command is too long: ${bytes} bytes (at most ${MAX_ARGV_BYTES})`);
  return [...argv];
}
