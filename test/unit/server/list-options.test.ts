import t from 'tap';
import type { Status } from '../../../src/api/types.js';
import { build, FakeHost, makePod } from './fixtures/fake-host.js';

/**
 * `ListOptions` as the 1.34 apiserver refuses them (each Status below was read off a real
 * kube-apiserver v1.34.4 for the same query), on every list nodelet serves, and a list's
 * resourceVersion read exactly (bigint) whatever its size.
 */

const lists = ['/api/v1/pods', '/api/v1/namespaces/default/pods', '/api/v1/nodes', '/api/v1/namespaces/default/events', '/api/v1/namespaces'];

t.test('resourceVersionMatch and sendInitialEvents on a list', async (t) => {
  const app = build(new FakeHost([makePod({ name: 'web' })]));
  for (const path of lists) {
    const get = async (q: string) => {
      const res = await app.inject(`${path}?${q}`);
      return { code: res.statusCode, body: res.json<Status>() };
    };
    t.match(await get('resourceVersionMatch=Foo&resourceVersion=5'), {
      code: 422,
      body: {
        reason: 'Invalid',
        message: 'ListOptions.meta.k8s.io "" is invalid: resourceVersionMatch: Unsupported value: "Foo": supported values: "Exact", "NotOlderThan", ""',
        details: { group: 'meta.k8s.io', kind: 'ListOptions', causes: [{ reason: 'FieldValueNotSupported', field: 'resourceVersionMatch' }] },
      },
    }, `${path}: unsupported match`);
    t.match(await get('resourceVersionMatch=Exact'), {
      code: 422,
      body: { message: 'ListOptions.meta.k8s.io "" is invalid: resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden unless resourceVersion is provided' },
    });
    t.match(await get('resourceVersionMatch=Exact&resourceVersion=0'), {
      code: 422,
      body: { message: 'ListOptions.meta.k8s.io "" is invalid: resourceVersionMatch: Forbidden: resourceVersionMatch "exact" is forbidden for resourceVersion "0"' },
    });
    for (const v of ['true', 'false']) {
      t.match(await get(`sendInitialEvents=${v}`), {
        code: 422,
        body: { message: 'ListOptions.meta.k8s.io "" is invalid: sendInitialEvents: Forbidden: sendInitialEvents is forbidden for list', details: { causes: [{ field: 'sendInitialEvents' }] } },
      }, `${path}: sendInitialEvents=${v}`);
    }
    t.match(await get('resourceVersionMatch=Foo'), {
      code: 422,
      body: { message: 'ListOptions.meta.k8s.io "" is invalid: [resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden unless resourceVersion is provided, resourceVersionMatch: Unsupported value: "Foo": supported values: "Exact", "NotOlderThan", ""]' },
    }, 'two problems: both, in the apiserver order');
  }
});

t.test("a list's resourceVersion: exact, refused when never issued or malformed", async (t) => {
  const app = build(new FakeHost([makePod({ name: 'web' })]));
  for (const path of lists) {
    const first = await app.inject(path);
    const current = first.json<{ metadata: { resourceVersion: string } }>().metadata.resourceVersion;
    t.match(current, /^\d+$/);
    for (const q of ['', 'resourceVersion=', 'resourceVersion=0', `resourceVersion=${current}`, 'resourceVersion=1', `resourceVersion=${current}&resourceVersionMatch=Exact`, 'resourceVersion=1&resourceVersionMatch=NotOlderThan']) {
      t.equal((await app.inject(`${path}?${q}`)).statusCode, 200, `${path}?${q}`);
    }
    const tooLarge = await app.inject(`${path}?resourceVersion=99999999999999999`);
    t.equal(tooLarge.statusCode, 504);
    t.match(tooLarge.json(), {
      reason: 'Timeout',
      message: `Timeout: Too large resource version: 99999999999999999, current: ${current}`,
      details: { causes: [{ reason: 'ResourceVersionTooLarge' }], retryAfterSeconds: 1 },
    });
    const max = await app.inject(`${path}?resourceVersion=18446744073709551615`);
    t.match({ code: max.statusCode, body: max.json() }, { code: 504, body: { message: /^Timeout: Too large resource version: 18446744073709551615, current: / } });
    const over = await app.inject(`${path}?resourceVersion=18446744073709551616`);
    t.match({ code: over.statusCode, body: over.json() }, {
      code: 400,
      body: { reason: 'BadRequest', message: 'invalid resource version: resourceVersion: Invalid value: "18446744073709551616": strconv.ParseUint: parsing "18446744073709551616": value out of range' },
    });
    const garbage = await app.inject(`${path}?resourceVersion=abc`);
    t.match({ code: garbage.statusCode, body: garbage.json() }, { code: 400, body: { message: 'invalid resource version: resourceVersion: Invalid value: "abc": strconv.ParseUint: parsing "abc": invalid syntax' } });
    const old = await app.inject(`${path}?resourceVersion=1&resourceVersionMatch=Exact`);
    t.match({ code: old.statusCode, body: old.json() }, { code: 410, body: { reason: 'Expired', message: 'The resourceVersion for the provided list is too old.' } });
  }
});

t.test('resourceVersionMatch on a watch', async (t) => {
  const app = build(new FakeHost([makePod({ name: 'web' })]));
  const get = async (q: string) => {
    const res = await app.inject(`/api/v1/pods?watch=true&${q}`);
    return { code: res.statusCode, body: res.json<Status>() };
  };
  t.match(await get('resourceVersionMatch=NotOlderThan&resourceVersion=3'), {
    code: 422,
    body: { message: 'ListOptions.meta.k8s.io "" is invalid: resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided' },
  });
  t.match(await get('sendInitialEvents=true&allowWatchBookmarks=true'), {
    code: 422,
    body: { message: 'ListOptions.meta.k8s.io "" is invalid: resourceVersionMatch: Forbidden: sendInitialEvents requires setting resourceVersionMatch to NotOlderThan' },
  });
  t.match(await get('sendInitialEvents=true&allowWatchBookmarks=true&resourceVersionMatch=Exact'), {
    code: 422,
    body: {
      message: 'ListOptions.meta.k8s.io "" is invalid: [resourceVersionMatch: Forbidden: sendInitialEvents requires setting resourceVersionMatch to NotOlderThan, resourceVersionMatch: Unsupported value: "Exact": supported values: "NotOlderThan"]',
      details: { causes: [{ reason: 'FieldValueForbidden' }, { reason: 'FieldValueNotSupported' }] },
    },
  });
  t.match(await get('resourceVersion=99999999999999999'), { code: 504, body: { message: /^Timeout: Too large resource version: 99999999999999999, current: \d+$/ } }, 'a watch echoes it exactly too');
  t.match(await get('resourceVersion=18446744073709551616'), { code: 400, body: { message: 'resourceVersion: Invalid value: "18446744073709551616": strconv.ParseUint: parsing "18446744073709551616": value out of range' } });
});
