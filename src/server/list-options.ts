import type { FastifyRequest } from 'fastify';
import { StatusError } from '../api/errors.js';
import type { StatusCause } from '../api/types.js';
import { parseResourceVersion, tooLargeResourceVersion } from '../watch/resource-version.js';
import { hasQuery, queryValue } from './params.js';

/**
 * `ListOptions` checks that do not depend on the kind, as the apiserver makes them before it
 * looks at any object (`k8s.io/apimachinery/pkg/apis/meta/internalversion/validation`,
 * `ValidateListOptions` and `validateWatchOptions`, with the WatchList gate on as in 1.34), and a
 * list's `resourceVersion` as the cacher reads it (`k8s.io/apiserver/pkg/storage/cacher`). Every
 * refusal is the apiserver's Status: 422 `Invalid` on `ListOptions.meta.k8s.io`, with one cause per
 * problem, in the apiserver's order.
 */

const NOT_OLDER_THAN = 'NotOlderThan';
const EXACT = 'Exact';

const forbidden = (field: string, detail: string): StatusCause => ({ reason: 'FieldValueForbidden', message: `Forbidden: ${detail}`, field });
const notSupported = (field: string, value: string, supported: readonly string[]): StatusCause => ({
  reason: 'FieldValueNotSupported',
  message: `Unsupported value: ${JSON.stringify(value)}: supported values: ${supported.map((s) => JSON.stringify(s)).join(', ')}`,
  field,
});

/** The apiserver's 422 for `causes` (one cause: its text; several: `[a, b]`). */
export function invalidListOptions(causes: readonly StatusCause[]): StatusError {
  const parts = causes.map((c) => `${c.field}: ${c.message}`);
  const text = parts.length === 1 ? parts[0] : `[${parts.join(', ')}]`;
  return new StatusError('Invalid', `ListOptions.meta.k8s.io "" is invalid: ${text}`, { kind: 'ListOptions', group: 'meta.k8s.io', causes: [...causes] });
}

/**
 * `resourceVersionMatch` and `sendInitialEvents` for a list (`watch` false) or a watch. A list
 * may not stream (`sendInitialEvents`), and `resourceVersionMatch` needs a `resourceVersion`
 * (`Exact` a real one); a watch takes `resourceVersionMatch` only as the streaming list's
 * `NotOlderThan`, and the streaming list requires it.
 */
export function validateListOptions(request: FastifyRequest, watch: boolean): void {
  const match = queryValue(request, 'resourceVersionMatch');
  const rv = queryValue(request, 'resourceVersion');
  const causes: StatusCause[] = [];
  if (watch) {
    if (!hasQuery(request, 'sendInitialEvents')) {
      if (match !== '') causes.push(forbidden('resourceVersionMatch', 'resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided'));
    } else if (match !== NOT_OLDER_THAN) {
      causes.push(forbidden('resourceVersionMatch', `sendInitialEvents requires setting resourceVersionMatch to ${NOT_OLDER_THAN}`));
      if (match !== '') causes.push(notSupported('resourceVersionMatch', match, [NOT_OLDER_THAN]));
    }
  } else {
    if (match !== '') {
      if (rv === '') causes.push(forbidden('resourceVersionMatch', 'resourceVersionMatch is forbidden unless resourceVersion is provided'));
      if (match !== EXACT && match !== NOT_OLDER_THAN) causes.push(notSupported('resourceVersionMatch', match, [EXACT, NOT_OLDER_THAN, '']));
      if (match === EXACT && rv === '0') causes.push(forbidden('resourceVersionMatch', 'resourceVersionMatch "exact" is forbidden for resourceVersion "0"'));
    }
    if (hasQuery(request, 'sendInitialEvents')) causes.push(forbidden('sendInitialEvents', 'sendInitialEvents is forbidden for list'));
  }
  if (causes.length > 0) throw invalidListOptions(causes);
}

/**
 * A list's `resourceVersion` against `current`, the newest version issued (what the list answers).
 * Unset, empty or `0`: any state will do. `N` (`NotOlderThan`, the default): any state not older
 * than N — nodelet's list is always the newest, so only an N never issued is refused (504, as the
 * apiserver after its 3 s wait). `Exact` N: the state at N, which nodelet keeps only while N is
 * the newest; an older N is the apiserver's 410 for a list too old. A malformed N is a 400.
 */
export function checkListResourceVersion(request: FastifyRequest, current: string): void {
  const rv = queryValue(request, 'resourceVersion');
  if (rv === '' || rv === '0') return;
  const requested = parseResourceVersion(rv, 'invalid resource version: ');
  const now = Number(current);
  if (requested > BigInt(now)) throw tooLargeResourceVersion(requested, now);
  if (queryValue(request, 'resourceVersionMatch') === EXACT && requested !== BigInt(now)) {
    throw new StatusError('Expired', 'The resourceVersion for the provided list is too old.');
  }
}

/** Both checks of a plain list (not a watch) whose answer carries `current`. */
export function checkListRequest(request: FastifyRequest, current: string): void {
  validateListOptions(request, false);
  checkListResourceVersion(request, current);
}
