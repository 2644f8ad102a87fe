import t from 'tap';
import { StatusError } from '../../../src/api/errors.js';
import { MAX_RESOURCE_VERSION, parseResourceVersion, tooLargeResourceVersion } from '../../../src/watch/resource-version.js';

/**
 * resourceVersions parse as Go's uint64 (`strconv.ParseUint(rv, 10, 64)`) and stay exact across
 * 2^53, where a JavaScript number would round: every value from 2^53 − 2 to 2^53 + 2 and from
 * 2^64 − 3 to 2^64 − 1 comes back as itself; 2^64 and beyond is `value out of range`.
 */

function refusal(rv: string): StatusError {
  try {
    parseResourceVersion(rv);
  } catch (err) {
    if (err instanceof StatusError) return err;
    throw err;
  }
  throw new Error(`${rv} parsed`);
}

t.test('exact around 2^53', async (t) => {
  const p53 = 2n ** 53n;
  for (let d = -2n; d <= 2n; d++) {
    const v = p53 + d;
    t.equal(parseResourceVersion(v.toString()), v, `2^53${d < 0 ? '' : '+'}${d}`);
  }
  // The rounding a number would do: these two are one double, two versions.
  t.not(parseResourceVersion('9007199254740993'), parseResourceVersion('9007199254740992'));
  t.equal(Number('9007199254740993'), Number('9007199254740992'), 'as numbers they collide (the old bug)');
});

t.test('exact up to 2^64 − 1, refused from 2^64', async (t) => {
  t.equal(MAX_RESOURCE_VERSION, 18446744073709551615n);
  for (const v of [MAX_RESOURCE_VERSION - 2n, MAX_RESOURCE_VERSION - 1n, MAX_RESOURCE_VERSION]) t.equal(parseResourceVersion(v.toString()), v);
  for (const rv of ['18446744073709551616', '99999999999999999999', '1'.repeat(21), '9'.repeat(5000)]) {
    const err = refusal(rv);
    t.equal(err.code, 400);
    t.equal(err.reason, 'BadRequest');
    t.equal(err.message, `resourceVersion: Invalid value: "${rv}": strconv.ParseUint: parsing "${rv}": value out of range`, rv.slice(0, 24));
  }
});

t.test('leading zeros are read as ParseUint reads them', async (t) => {
  t.equal(parseResourceVersion('007'), 7n);
  t.equal(parseResourceVersion('0'), 0n);
  t.equal(parseResourceVersion(`${'0'.repeat(30)}18446744073709551615`), MAX_RESOURCE_VERSION, 'zeros do not count as digits');
});

t.test('anything but digits is invalid syntax', async (t) => {
  for (const rv of ['', 'abc', '-1', '+1', '1.5', ' 1', '1 ', '0x10', '1e3', '١٢', '1_000']) {
    const err = refusal(rv);
    t.equal(err.code, 400, JSON.stringify(rv));
    t.equal(err.message, `resourceVersion: Invalid value: ${JSON.stringify(rv)}: strconv.ParseUint: parsing ${JSON.stringify(rv)}: invalid syntax`);
  }
  try {
    parseResourceVersion('x', 'invalid resource version: ');
    t.fail('parsed');
  } catch (err) {
    t.match(err, { message: 'invalid resource version: resourceVersion: Invalid value: "x": strconv.ParseUint: parsing "x": invalid syntax' }, "a list's wording");
  }
});

t.test('too large: the apiserver Status with the version echoed exactly', async (t) => {
  const err = tooLargeResourceVersion(99999999999999999n, 1796118408565017);
  t.equal(err.code, 504);
  t.same(err.toStatus(), {
    kind: 'Status',
    apiVersion: 'v1',
    metadata: {},
    status: 'Failure',
    message: 'Timeout: Too large resource version: 99999999999999999, current: 1796118408565017',
    reason: 'Timeout',
    details: { causes: [{ reason: 'ResourceVersionTooLarge', message: 'Too large resource version' }], retryAfterSeconds: 1 },
    code: 504,
  });
});
