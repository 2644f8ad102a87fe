import { StatusError, badRequest } from '../api/errors.js';

/**
 * resourceVersions as the apiserver reads them: decimal strings that parse as Go's `uint64`
 * (`k8s.io/apiserver/pkg/storage/api_object_versioner.go`, `ParseResourceVersion` →
 * `strconv.ParseUint(rv, 10, 64)`), compared exactly. A JavaScript `number` holds integers only
 * up to 2^53, so a client's version goes through `bigint` and is echoed as it was parsed, never
 * rounded; the versions nodelet issues itself stay far below 2^53 (see `ResourceVersionClock`).
 */

/** Go's `math.MaxUint64`: the largest resourceVersion there is. */
export const MAX_RESOURCE_VERSION = 2n ** 64n - 1n;
/** Decimal digits of `MAX_RESOURCE_VERSION`; more (after leading zeros) is out of range without parsing. */
const MAX_DIGITS = MAX_RESOURCE_VERSION.toString().length;

/**
 * The resourceVersion `rv` names, or the apiserver's refusal (400): `strconv.ParseUint`'s
 * `invalid syntax` for anything but ASCII digits (signs, spaces, `1.5`, `0x10`), `value out of
 * range` above 2^64−1. `prefix` is the wording the apiserver puts before it (lists say
 * `invalid resource version: `, watches nothing).
 */
export function parseResourceVersion(rv: string, prefix = ''): bigint {
  const refuse = (why: string) =>
    badRequest(`${prefix}resourceVersion: Invalid value: ${JSON.stringify(rv)}: strconv.ParseUint: parsing ${JSON.stringify(rv)}: ${why}`);
  if (!/^[0-9]+$/.test(rv)) throw refuse('invalid syntax');
  const digits = rv.replace(/^0+(?=.)/, '');
  if (digits.length > MAX_DIGITS) throw refuse('value out of range');
  const value = BigInt(digits);
  if (value > MAX_RESOURCE_VERSION) throw refuse('value out of range');
  return value;
}

/**
 * The apiserver's answer to a version newer than any it issued (`storage.NewTooLargeResourceVersionError`
 * through `InterpretListError`/`InterpretWatchError`): 504 `Timeout`, cause `ResourceVersionTooLarge`,
 * retry after a second. The apiserver first waits up to 3 s for its cache to catch up; nodelet's
 * state is its own and never behind, so it answers at once.
 */
export function tooLargeResourceVersion(requested: bigint, current: number): StatusError {
  return new StatusError('Timeout', `Timeout: Too large resource version: ${requested}, current: ${current}`, {
    causes: [{ reason: 'ResourceVersionTooLarge', message: 'Too large resource version' }],
    retryAfterSeconds: 1,
  });
}
