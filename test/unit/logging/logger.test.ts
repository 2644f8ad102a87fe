import t from 'tap';
import { LOG_STRING_LIMIT } from '../../../src/api/truncate.js';
import { MAX_LOG_LINE_BYTES, createLogger, redactURL } from '../../../src/logging/index.js';
import { buildServer } from '../../../src/server/index.js';
import { FakeHost, makePod } from '../server/fixtures/fake-host.js';

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

t.test('request URLs are logged with every query value but the API options redacted', async (t) => {
  t.equal(redactURL('/pods'), '/pods');
  t.equal(
    redactURL('/exec/default/p/c?command=sh&command=-c&command=echo%20s3cret&stdout=1&tty=1&access_token=abc'),
    '/exec/default/p/c?command=[REDACTED]&command=[REDACTED]&command=[REDACTED]&stdout=1&tty=1&access_token=[REDACTED]',
  );
  t.equal(redactURL('/run/ns/p/c?cmd=cat+/etc/shadow'), '/run/ns/p/c?cmd=[REDACTED]');
  t.equal(redactURL('/api/v1/pods?watch=true&labelSelector=app%3Dweb&resourceVersion=12&x'), '/api/v1/pods?watch=true&labelSelector=app%3Dweb&resourceVersion=12&x');
  t.equal(redactURL('/p?%E0%A4%A=1&follow=1'), '/p?%E0%A4%A=[REDACTED]&follow=1', 'an undecodable key is redacted, never a throw');

  // Through Fastify at -v 4, the way nodelet's server logs each request.
  const lines: string[] = [];
  const log = createLogger({ verbosity: 4, format: 'json', destination: { write: (l: string) => void lines.push(l) } });
  const app = buildServer({ host: new FakeHost([makePod({ name: 'web' })]), logger: log, version: { gitVersion: 'v1.30.2-nodelet' } });
  await app.inject({ method: 'GET', url: '/exec/default/web/c?command=echo&command=hunter2&stdout=1' });
  await app.close();
  const all = lines.join('');
  t.match(all, /"url":"\/exec\/default\/web\/c\?command=\[REDACTED\]&command=\[REDACTED\]&stdout=1"/, 'the request line is logged, redacted');
  t.notMatch(all, /hunter2/, 'the argument is nowhere in the log');
});
