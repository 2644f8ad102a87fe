import t from 'tap';
import { StatusError } from '../../../src/api/errors.js';
import { parseLogQuery, type LogQuery, type LogQueryDialect } from '../../../src/streaming/logs/options.js';

const now = new Date('2026-11-29T12:00:00.000Z');
const parse = (query: LogQuery, dialect: LogQueryDialect = 'kubelet') => parseLogQuery(query, { dialect, pod: 'web', now });

/** The StatusError `fn` throws, or a failure. */
function thrown(fn: () => unknown): StatusError {
  try {
    fn();
  } catch (err) {
    if (err instanceof StatusError) return err;
    throw err;
  }
  throw new Error('expected a StatusError');
}

t.test('defaults: everything off, all streams', async (t) => {
  t.same(parse({}), { options: { follow: false, timestamps: false, stream: 'All' }, previous: false });
});

t.test('each option decodes', async (t) => {
  const p = parse({ follow: 'true', previous: '1', timestamps: 'T', tailLines: '5', limitBytes: '100', container: 'x' }, 'apiserver');
  t.same(p, { options: { follow: true, timestamps: true, stream: 'All', tailLines: 5, limitBytes: 100 }, previous: true, container: 'x' });
  t.equal(parse({ stream: 'Stderr' }).options.stream, 'Stderr');
  t.equal(parse({ stream: 'Stdout' }).options.stream, 'Stdout');
  t.equal(parse({ tailLines: '0' }).options.tailLines, 0, 'tailLines=0 is valid: no old lines');
  t.equal(parse({ tailLines: '+7' }).options.tailLines, 7, 'ParseInt takes a sign');
  t.equal(parse({ follow: ['true', 'false'] }).options.follow, true, 'the first of repeated values (url.Values.Get)');
});

t.test('booleans take Go strconv.ParseBool spellings', async (t) => {
  for (const v of ['1', 't', 'T', 'TRUE', 'true', 'True']) t.equal(parse({ follow: v }).options.follow, true, v);
  for (const v of ['0', 'f', 'F', 'FALSE', 'false', 'False']) t.equal(parse({ follow: v }).options.follow, false, v);
  for (const v of ['yes', 'tRUE', '', '2']) t.equal(thrown(() => parse({ timestamps: v })).code, 400, JSON.stringify(v));
});

t.test('since: now-sinceSeconds, or sinceTime (nanoseconds accepted)', async (t) => {
  t.equal(parse({ sinceSeconds: '60' }).options.since?.toISOString(), '2026-11-29T11:59:00.000Z');
  t.equal(parse({ sinceTime: '2026-11-29T11:00:00Z' }).options.since?.toISOString(), '2026-11-29T11:00:00.000Z');
  t.equal(parse({ sinceTime: '2026-11-29T11:00:00.123456789Z' }).options.since?.toISOString(), '2026-11-29T11:00:00.123Z', 'kept to the millisecond (rounded down: never hides a wanted line)');
  t.equal(parse({ sinceTime: '2026-11-29T13:00:00+02:00' }).options.since?.toISOString(), '2026-11-29T11:00:00.000Z');
  t.equal(parse({ sinceTime: '' }).options.since, undefined, 'an empty sinceTime is the zero time: no filter');
  t.equal(parse({ sinceTime: 'null' }).options.since, undefined);
  t.equal(parse({ sinceSeconds: '9223372036854775807' }).options.since, undefined, 'before 1970 filters nothing');
});

t.test('legacy tail replaces tailLines; tail=all is no limit', async (t) => {
  t.equal(parse({ tail: '3' }).options.tailLines, 3);
  t.equal(parse({ tail: '3', tailLines: '9' }).options.tailLines, 3);
  t.equal(parse({ tail: 'all', tailLines: '9' }).options.tailLines, undefined);
  t.equal(parse({ tail: 'all' }).options.tailLines, undefined);
  t.equal(parse({ tail: '', tailLines: '9' }).options.tailLines, 9, 'an empty tail is ignored');
});

// [query, why]: decoding fails → 400 "Unable to decode query." on the kubelet path.
const undecodable: [LogQuery, string][] = [
  [{ sinceTime: 'yesterday' }, 'sinceTime: parsing time "yesterday"'],
  [{ sinceTime: '2026-11-29' }, 'sinceTime: parsing time'],
  [{ tailLines: 'abc' }, 'tailLines: strconv.ParseInt: parsing "abc": invalid syntax'],
  [{ tailLines: '1e30' }, 'tailLines: strconv.ParseInt: parsing "1e30": invalid syntax'],
  [{ tailLines: '9223372036854775808' }, 'value out of range'],
  [{ tailLines: '' }, 'tailLines: strconv.ParseInt: parsing ""'],
  [{ tail: 'lots' }, 'tailLines: strconv.ParseInt: parsing "lots"'],
  [{ limitBytes: '-' }, 'limitBytes: strconv.ParseInt: parsing "-": invalid syntax'],
  [{ limitBytes: '1.5' }, 'limitBytes'],
  [{ sinceSeconds: ' 5' }, 'sinceSeconds'],
  [{ follow: 'yes' }, 'follow: strconv.ParseBool: parsing "yes": invalid syntax'],
  [{ previous: 'on' }, 'previous: strconv.ParseBool'],
];

// [query, apiserver message]: decoded but refused by ValidatePodLogOptions → 422 "Invalid request.".
const invalidCombos: [LogQuery, string][] = [
  [{ sinceSeconds: '10', sinceTime: '2026-11-29T11:00:00Z' }, 'Forbidden: at most one of `sinceTime` or `sinceSeconds` may be specified'],
  [{ sinceSeconds: '10', sinceTime: '' }, 'Forbidden: at most one of `sinceTime` or `sinceSeconds` may be specified'],
  [{ tailLines: '-1' }, 'tailLines: Invalid value: -1: must be greater than or equal to 0'],
  [{ tail: '-1' }, 'tailLines: Invalid value: -1: must be greater than or equal to 0'],
  [{ limitBytes: '0' }, 'limitBytes: Invalid value: 0: must be greater than 0'],
  [{ limitBytes: '-5' }, 'limitBytes: Invalid value: -5: must be greater than 0'],
  [{ sinceSeconds: '0' }, 'sinceSeconds: Invalid value: 0: must be greater than 0'],
  [{ sinceSeconds: '-60' }, 'sinceSeconds: Invalid value: -60: must be greater than 0'],
  [{ stream: 'Both' }, 'stream: Unsupported value: "Both": supported values: "All", "Stderr", "Stdout"'],
  [{ stream: 'stdout' }, 'stream: Unsupported value: "stdout"'],
  [{ stream: 'Stdout', tailLines: '5' }, 'Forbidden: `tailLines` and specific `stream` are mutually exclusive for now'],
];

t.test('decode failures are 400 with the kubelet text, or the parse error on the apiserver path', async (t) => {
  for (const [query, why] of undecodable) {
    const k = thrown(() => parse(query, 'kubelet'));
    t.same([k.code, k.reason, k.message], [400, 'BadRequest', '{"message": "Unable to decode query."}'], JSON.stringify(query));
    const a = thrown(() => parse(query, 'apiserver'));
    t.equal(a.code, 400);
    t.ok(a.message.includes(why), `${JSON.stringify(query)}: ${a.message}`);
  }
});

t.test('invalid combinations are 422 with the kubelet text, or PodLogOptions "web" is invalid', async (t) => {
  for (const [query, message] of invalidCombos) {
    const k = thrown(() => parse(query, 'kubelet'));
    t.same([k.code, k.reason, k.message], [422, 'Invalid', '{"message": "Invalid request."}'], JSON.stringify(query));
    const a = thrown(() => parse(query, 'apiserver'));
    t.equal(a.code, 422);
    t.ok(a.message.startsWith('PodLogOptions "web" is invalid: '), a.message);
    t.ok(a.message.includes(message), `${JSON.stringify(query)}: ${a.message}`);
    t.equal(a.details?.kind, 'PodLogOptions');
    t.equal(a.details?.name, 'web');
  }
  const several = thrown(() => parse({ tailLines: '-1', limitBytes: '0' }, 'apiserver'));
  t.equal(several.message, 'PodLogOptions "web" is invalid: [tailLines: Invalid value: -1: must be greater than or equal to 0, limitBytes: Invalid value: 0: must be greater than 0]');
  t.same(several.details?.causes?.map((c) => c.field), ['tailLines', 'limitBytes']);
});

t.test('decoding comes before validation (a 400 wins over a 422)', async (t) => {
  t.equal(thrown(() => parse({ tailLines: '-1', sinceTime: 'yesterday' })).code, 400);
});
