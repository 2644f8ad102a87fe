import t from 'tap';
import { LOG_STRING_LIMIT } from '../../../src/api/truncate.js';
import { MAX_LOG_LINE_BYTES, createLogger } from '../../../src/logging/index.js';

const capture = (format: 'json' | 'text' = 'json') => {
  const lines: string[] = [];
  const log = createLogger({ verbosity: 2, format, destination: { write: (l: string) => void lines.push(l) } });
  return { log, lines };
};

t.test('every string of a record is cut to 4 KiB: message, fields, nested fields, errors', async (t) => {
  const { log, lines } = capture();
  const big = 'q'.repeat(4 * 1024 * 1024);
  const err = Object.assign(new RangeError(`boom ${big}`), { code: 'ENAMETOOLONG', path: big });
  log.warn({ error: big, nested: { list: [big, 'small'] }, err }, `Failed ${big}`);
  t.equal(lines.length, 1);
  const line = lines[0] ?? '';
  t.ok(Buffer.byteLength(line) < 8 * LOG_STRING_LIMIT, `line is ${Buffer.byteLength(line)} bytes`);
  const rec = JSON.parse(line) as { msg: string; error: string; nested: { list: string[] }; err: { type: string; code: string; message: string; path: string; stack: string } };
  for (const s of [rec.msg, rec.error, rec.nested.list[0] ?? '', rec.err.message, rec.err.path, rec.err.stack]) {
    t.equal(Buffer.byteLength(s), LOG_STRING_LIMIT);
    t.ok(s.endsWith(' ...'));
  }
  t.equal(rec.nested.list[1], 'small');
  t.equal(rec.err.type, 'RangeError', 'the error keeps its class name');
  t.equal(rec.err.code, 'ENAMETOOLONG');
  t.equal(err.message.length, 5 + big.length, "the caller's error is not touched");
});

t.test('a small record is written as before', async (t) => {
  const { log, lines } = capture();
  const fields = { pod: 'default/p', n: 3 };
  log.info(fields, 'Started container');
  const rec = JSON.parse(lines[0] ?? '') as Record<string, unknown>;
  t.equal(rec.msg, 'Started container');
  t.equal(rec.pod, 'default/p');
  t.equal(rec.n, 3);
});

t.test('a line still over 64 KiB (many fields) becomes a short one saying so', async (t) => {
  const { log, lines } = capture();
  log.warn({ many: Array.from({ length: 64 }, () => 'w'.repeat(4000)) }, 'many');
  const line = lines[0] ?? '';
  t.ok(Buffer.byteLength(line) <= 2 * LOG_STRING_LIMIT);
  const rec = JSON.parse(line) as { level: number; msg: string; head: string };
  t.equal(rec.level, 40, 'the level is kept');
  t.match(rec.msg, new RegExp(`^log line of \\d+ bytes dropped \\(over ${MAX_LOG_LINE_BYTES}\\)$`));
  t.ok(rec.head.startsWith('{"level":40'));
});

t.test('the text format is bounded too', async (t) => {
  const { log, lines } = capture('text');
  log.warn({ error: 'e'.repeat(1024 * 1024) }, 'm'.repeat(1024 * 1024));
  t.ok(Buffer.byteLength(lines[0] ?? '') < 3 * LOG_STRING_LIMIT);
});
