import t from 'tap';
import { JsonFileDecoder, MAX_JSON_RECORD, tailStart } from '../../../src/runtime/docker/json-file.js';

const rec = (log: string, stream = 'stdout', time = '2026-12-04T16:00:00.123456789Z') => JSON.stringify({ log, stream, time }) + '\n';

function decodeAll(input: Buffer[], opts: ConstructorParameters<typeof JsonFileDecoder>[0]) {
  const decoder = new JsonFileDecoder(opts);
  const out: [number, string][] = [];
  for (const chunk of input) decoder.push(chunk, (stream, payload) => out.push([stream, payload.toString('utf8')]));
  return { out, skipped: decoder.skipped };
}

t.test('records become their text, stamped with their time when asked', async (t) => {
  const data = Buffer.from(rec('one\n') + rec('two\n', 'stderr', '2026-12-04T16:00:01Z'));
  t.same(decodeAll([data], { stamped: false, stream: 'All' }).out, [[1, 'one\n'], [2, 'two\n']]);
  t.same(decodeAll([data], { stamped: true, stream: 'All' }).out, [
    [1, '2026-12-04T16:00:00.123456789Z one\n'],
    [2, '2026-12-04T16:00:01Z two\n'],
  ]);
});

t.test('only the selected stream', async (t) => {
  const data = Buffer.from(rec('out\n') + rec('err\n', 'stderr'));
  t.same(decodeAll([data], { stamped: false, stream: 'Stdout' }).out, [[1, 'out\n']]);
  t.same(decodeAll([data], { stamped: false, stream: 'Stderr' }).out, [[2, 'err\n']]);
});

t.test('a record split anywhere across chunks, multi-byte text and escapes included', async (t) => {
  const text = 'é€😀 "quoted" \\ tab\t and \u0001 control\n';
  const data = Buffer.from(rec(text) + rec('partial piece without newline') + rec(' rest\n'));
  const whole = decodeAll([data], { stamped: false, stream: 'All' }).out;
  t.same(whole.map(([, s]) => s), [text, 'partial piece without newline', ' rest\n']);
  for (let cut = 1; cut < data.length; cut++) {
    const split = decodeAll([data.subarray(0, cut), data.subarray(cut)], { stamped: false, stream: 'All' }).out;
    if (JSON.stringify(split) !== JSON.stringify(whole)) return t.fail(`split at ${cut}: ${JSON.stringify(split)}`);
  }
  const bytewise = decodeAll([...data].map((b) => Buffer.from([b])), { stamped: false, stream: 'All' }).out;
  t.same(bytewise, whole, 'one byte at a time');
});

t.test('corrupt lines and oversized records are skipped, the records around them kept', async (t) => {
  const huge = '{"log":"' + 'x'.repeat(MAX_JSON_RECORD + 10) + '"}\n';
  const data = [Buffer.from(rec('a\n') + 'not json\n' + '{"stream":"stdout"}\n' + '\n'), Buffer.from(huge.slice(0, 70_000)), Buffer.from(huge.slice(70_000) + rec('b\n'))];
  const { out, skipped } = decodeAll(data, { stamped: false, stream: 'All' });
  t.same(out.map(([, s]) => s), ['a\n', 'b\n']);
  t.equal(skipped, 3, 'not json, no log field, too long');
});

t.test('tailStart: the offset of the last N records, looking further back when short', async (t) => {
  const data = Buffer.from('a\nb\nc\n');
  t.same(tailStart(data, 0, true), { offset: 6, wanted: 0 }, 'none: the end');
  t.same(tailStart(data, 1, true), { offset: 4, wanted: 0 });
  t.same(tailStart(data, 2, true), { offset: 2, wanted: 0 });
  t.same(tailStart(data, 3, true), { offset: 0, wanted: 1 }, 'all three: the newline before them is in an earlier chunk, if any');
  t.same(tailStart(data, 5, true), { offset: 0, wanted: 3 });
  // An earlier chunk: its last newline ends a record the later chunk does not hold.
  t.same(tailStart(Buffer.from('x\ny\n'), 1, false), { offset: 4, wanted: 0 }, 'the boundary at the chunk end');
  t.same(tailStart(Buffer.from('x\ny\n'), 2, false), { offset: 2, wanted: 0 });
  t.same(tailStart(Buffer.from('a\nb\nc'), 1, true), { offset: 4, wanted: 0 }, 'a record still being written counts');
  t.same(tailStart(Buffer.alloc(0), 2, true), { offset: 0, wanted: 2 });
});
