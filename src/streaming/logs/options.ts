import { type StatusError, badRequest, invalid } from '../../api/errors.js';
import type { StatusCause } from '../../api/types.js';
import type { LogOptions } from '../types.js';
import { parseTimestamp } from './time.js';

/** A query value as Fastify's querystring parser hands it over (repeated keys become arrays). */
export type LogQuery = Readonly<Record<string, string | string[] | undefined>>;

/**
 * Which URL the request came in on. Both decode `v1.PodLogOptions` the same way; they differ in
 * their error messages: the kubelet's `getContainerLogs` answers fixed texts, the apiserver says
 * what is wrong.
 */
export type LogQueryDialect = 'kubelet' | 'apiserver';

export interface ParsedLogQuery {
  readonly options: LogOptions;
  readonly previous: boolean;
  /** The `container` query value (the apiserver path); the kubelet path carries it in the URL. */
  readonly container?: string;
}

export interface ParseContext {
  readonly dialect: LogQueryDialect;
  /** The pod name, for the apiserver's `PodLogOptions "<pod>" is invalid` message. */
  readonly pod: string;
  readonly now?: Date;
}

/** The kubelet's literal bodies (server.go `getContainerLogs`), used as the Status message. */
const KUBELET_DECODE = '{"message": "Unable to decode query."}';
const KUBELET_INVALID = '{"message": "Invalid request."}';

const STREAMS = ['All', 'Stderr', 'Stdout'] as const;
type Stream = (typeof STREAMS)[number];

const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;

const first = (v: string | string[] | undefined): string | undefined => (Array.isArray(v) ? v[0] : v);

class DecodeError extends Error {}

/** Go's `strconv.ParseBool`. (apimachinery itself reads any value but `0`/`false` as true; a typo here is a 400 instead.) */
function decodeBool(name: string, raw: string | undefined): boolean {
  if (raw === undefined) return false;
  if (['1', 't', 'T', 'TRUE', 'true', 'True'].includes(raw)) return true;
  if (['0', 'f', 'F', 'FALSE', 'false', 'False'].includes(raw)) return false;
  throw new DecodeError(`${name}: strconv.ParseBool: parsing ${JSON.stringify(raw)}: invalid syntax`);
}

/** Go's `strconv.ParseInt(s, 10, 64)`: no exponent, no fraction, no spaces, int64 range. */
function decodeInt(name: string, raw: string | undefined): bigint | undefined {
  if (raw === undefined) return undefined;
  if (!/^[+-]?[0-9]+$/.test(raw)) throw new DecodeError(`${name}: strconv.ParseInt: parsing ${JSON.stringify(raw)}: invalid syntax`);
  const v = BigInt(raw);
  if (v < INT64_MIN || v > INT64_MAX) throw new DecodeError(`${name}: strconv.ParseInt: parsing ${JSON.stringify(raw)}: value out of range`);
  return v;
}

/**
 * `metav1.Time.UnmarshalQueryParameter`: '' and `null` are a set-but-zero time (it still counts as
 * "sinceTime given" for validation, and filters nothing).
 */
function decodeTime(name: string, raw: string | undefined): { at: Date | undefined } | undefined {
  if (raw === undefined) return undefined;
  if (raw === '' || raw === 'null') return { at: undefined };
  const ts = parseTimestamp(raw);
  if (!ts) throw new DecodeError(`${name}: parsing time ${JSON.stringify(raw)} as "2006-01-02T15:04:05Z07:00": not an RFC 3339 time`);
  // Date holds milliseconds: the nanoseconds below are dropped, so the filter errs on the side of
  // showing a line rather than hiding it.
  return { at: new Date(ts.epochMs) };
}

const toNumber = (v: bigint): number => Number(v > BigInt(Number.MAX_SAFE_INTEGER) ? BigInt(Number.MAX_SAFE_INTEGER) : v);

/**
 * Decodes and validates `v1.PodLogOptions` from a query like the kubelet's `getContainerLogs`:
 * legacy `tail` (`all` = no limit) replaces `tailLines`; decoding failures are 400, then
 * `ValidatePodLogOptions` failures 422 — both before any pod lookup.
 */
export function parseLogQuery(query: LogQuery, ctx: ParseContext): ParsedLogQuery {
  let tailRaw = first(query.tailLines);
  const tail = first(query.tail);
  if (tail !== undefined && tail !== '') tailRaw = tail === 'all' ? undefined : tail;

  let decoded;
  try {
    // Field order of the generated conversion, so the first failure reported is Go's.
    decoded = {
      follow: decodeBool('follow', first(query.follow)),
      previous: decodeBool('previous', first(query.previous)),
      sinceSeconds: decodeInt('sinceSeconds', first(query.sinceSeconds)),
      sinceTime: decodeTime('sinceTime', first(query.sinceTime)),
      timestamps: decodeBool('timestamps', first(query.timestamps)),
      tailLines: decodeInt('tailLines', tailRaw),
      limitBytes: decodeInt('limitBytes', first(query.limitBytes)),
      stream: first(query.stream),
    };
  } catch (err) {
    if (!(err instanceof DecodeError)) throw err;
    throw badRequest(ctx.dialect === 'kubelet' ? KUBELET_DECODE : err.message);
  }
  const { follow, previous, sinceSeconds, sinceTime, timestamps, tailLines, limitBytes } = decoded;
  const stream = decoded.stream ?? 'All';

  const causes = validate(stream, sinceSeconds, sinceTime !== undefined, tailLines, limitBytes);
  if (causes.length > 0) throw invalidOptions(ctx, causes);

  const now = (ctx.now ?? new Date()).getTime();
  // The later of now-sinceSeconds and sinceTime (kuberuntime `NewLogOptions`); before 1970 filters nothing.
  let sinceMs = sinceSeconds === undefined ? undefined : now - toNumber(sinceSeconds) * 1000;
  if (sinceMs !== undefined && sinceMs <= 0) sinceMs = undefined;
  const sinceAt = sinceTime?.at?.getTime();
  if (sinceAt !== undefined && sinceAt > (sinceMs ?? -Infinity)) sinceMs = sinceAt;

  const container = first(query.container);
  return {
    options: {
      follow,
      timestamps,
      stream: stream as Stream,
      ...(tailLines !== undefined ? { tailLines: toNumber(tailLines) } : {}),
      ...(limitBytes !== undefined ? { limitBytes: toNumber(limitBytes) } : {}),
      ...(sinceMs !== undefined ? { since: new Date(sinceMs) } : {}),
    },
    previous,
    ...(container ? { container } : {}),
  };
}

/** `ValidatePodLogOptions` (k8s.io/kubelet validation), with Go's `field.Error` wording. */
function validate(stream: string, sinceSeconds: bigint | undefined, hasSinceTime: boolean, tailLines: bigint | undefined, limitBytes: bigint | undefined): StatusCause[] {
  const causes: StatusCause[] = [];
  const invalidValue = (field: string, value: bigint, msg: string) =>
    causes.push({ reason: 'FieldValueInvalid', field, message: `Invalid value: ${value}: ${msg}` });
  const forbidden = (msg: string) => causes.push({ reason: 'FieldValueForbidden', field: '', message: `Forbidden: ${msg}` });

  if (tailLines !== undefined && tailLines < 0n) invalidValue('tailLines', tailLines, 'must be greater than or equal to 0');
  if (limitBytes !== undefined && limitBytes < 1n) invalidValue('limitBytes', limitBytes, 'must be greater than 0');
  if (sinceSeconds !== undefined && hasSinceTime) forbidden('at most one of `sinceTime` or `sinceSeconds` may be specified');
  else if (sinceSeconds !== undefined && sinceSeconds < 1n) invalidValue('sinceSeconds', sinceSeconds, 'must be greater than 0');
  if (!(STREAMS as readonly string[]).includes(stream)) {
    causes.push({
      reason: 'FieldValueNotSupported',
      field: 'stream',
      message: `Unsupported value: ${JSON.stringify(stream)}: supported values: ${STREAMS.map((s) => `"${s}"`).join(', ')}`,
    });
  }
  if (stream !== 'All' && tailLines !== undefined) forbidden('`tailLines` and specific `stream` are mutually exclusive for now');
  return causes;
}

function invalidOptions(ctx: ParseContext, causes: StatusCause[]): StatusError {
  if (ctx.dialect === 'kubelet') return invalid(KUBELET_INVALID);
  // apimachinery `errors.NewInvalid`: one error bare, several as a bracketed list.
  const texts = causes.map((c) => (c.field ? `${c.field}: ${c.message}` : c.message ?? ''));
  const list = texts.length === 1 ? texts[0] : `[${texts.join(', ')}]`;
  return invalid(`PodLogOptions ${JSON.stringify(ctx.pod)} is invalid: ${list}`, { name: ctx.pod, kind: 'PodLogOptions', causes });
}
