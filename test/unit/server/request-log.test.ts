import t from 'tap';
import type { RouteShorthandOptions } from 'fastify';
import { pino, type Logger } from 'pino';
import { RequestLogger } from '../../../src/server/request-log.js';
import { build, FakeHost, makePod } from './fixtures/fake-host.js';

/** A pino logger at `level` whose lines are collected as parsed JSON. */
function collecting(level: pino.LevelWithSilent): { logger: Logger; lines: Record<string, unknown>[] } {
  const lines: Record<string, unknown>[] = [];
  const logger = pino({ level }, { write: (line: string) => void lines.push(JSON.parse(line) as Record<string, unknown>) });
  return { logger, lines };
}

t.test('RequestLogger: no child is made for lines below the level; a line at the level carries the bindings', async (t) => {
  const { logger, lines } = collecting('info');
  const log = new RequestLogger(logger, { reqId: 'req-7' });
  const lazy = log;
  log.debug({ big: 'object' }, 'dropped');
  log.trace('dropped too');
  t.equal(lazy.made, false, 'nothing made for dropped lines');
  t.equal(lines.length, 0);
  t.equal(lazy.isLevelEnabled('debug'), false);
  t.equal(lazy.isLevelEnabled('info'), true);
  log.info({ user: 'alice' }, 'Forbidden');
  log.error('failed %s', 'twice');
  t.equal(lazy.made, true);
  t.match(lines, [
    { level: 30, reqId: 'req-7', user: 'alice', msg: 'Forbidden' },
    { level: 50, reqId: 'req-7', msg: 'failed twice' },
  ]);
  t.equal(log.level, 'info');
});

t.test('a route asking for its own log level or serializers is refused when registered', async (t) => {
  const { logger } = collecting('info');
  const options: RouteShorthandOptions[] = [{ logLevel: 'debug' }, { logSerializers: { req: () => 'x' } }];
  for (const option of options) {
    const app = build(new FakeHost(), { logger });
    t.throws(() => app.get('/own-logging', option, async () => 'x'), /per-route logLevel and logSerializers are not supported/);
    await app.close();
  }
});

t.test('each request gets a logger of its own with its id, made before any hook runs', async (t) => {
  const { logger, lines } = collecting('debug');
  const app = build(new FakeHost([makePod({ name: 'web' })]), { logger });
  const seen: unknown[] = [];
  app.addHook('onRequest', async (request, reply) => {
    seen.push(request.log instanceof RequestLogger && request.log === reply.log);
  });
  t.equal((await app.inject('/podInfo?podID=web&podNamespace=default')).statusCode, 200);
  // Refused by the gate before the hook above: its lines still carry its own id.
  t.equal((await app.inject('/no-such-path')).statusCode, 404);
  t.same(seen, [true], 'a hook sees the request\'s logger');
  const ids = lines.filter((l) => l.msg === 'incoming request').map((l) => l.reqId);
  t.equal(ids.length, 2, 'routed and unknown requests alike');
  t.ok(ids[0] !== undefined && ids[1] !== undefined && ids[0] !== ids[1], 'each line names its own request');
  await app.close();
});

t.test('the access log at debug (V(3)): incoming and completed lines with the request id and the status', async (t) => {
  const { logger, lines } = collecting('debug');
  const app = build(new FakeHost([makePod({ name: 'web' })]), { logger });
  const res = await app.inject('/podInfo?podID=web&podNamespace=default');
  t.equal(res.statusCode, 200);
  const incoming = lines.find((l) => l.msg === 'incoming request');
  const completed = lines.find((l) => l.msg === 'request completed');
  t.ok(incoming, 'incoming request logged');
  t.ok(completed, 'request completed logged');
  t.ok(incoming?.reqId !== undefined && incoming.reqId === completed?.reqId, 'both name the same request');
  // Fastify's `res` serializer, not the whole reply object.
  t.same(completed?.res, { statusCode: 200 });
  t.type(completed?.responseTime, 'number');
  await app.close();
});

t.test('at info (the default V(2)) a served request writes nothing; a failed one still names its request', async (t) => {
  const { logger, lines } = collecting('info');
  const app = build(new FakeHost([makePod({ name: 'web' })]), { logger });
  const before = lines.length;
  t.equal((await app.inject('/podInfo?podID=web&podNamespace=default')).statusCode, 200);
  t.equal(lines.length, before, 'no line for a served request');
  // A 500 from the handler is logged at error, with the request's id.
  const failing = new FakeHost();
  failing.running = new Error('Cannot connect to the Docker daemon');
  const app2 = build(failing, { logger });
  t.equal((await app2.inject('/runningpods/')).statusCode, 500);
  const failed = lines.find((l) => l.msg === 'request failed');
  t.ok(failed, 'the 500 is logged');
  t.not(failed?.reqId, undefined, 'with its request id');
  await app.close();
  await app2.close();
});

t.test('a logger without serializers of its own gets Fastify\'s: a request line names the request, never its headers', async (t) => {
  const { logger, lines } = collecting('trace');
  const app = build(new FakeHost([makePod({ name: 'web' })]), { logger });
  t.equal((await app.inject({ url: '/podInfo?podID=web&podNamespace=default', headers: { authorization: 'Bearer secret-token', cookie: 'c=secret-cookie' } })).statusCode, 200);
  const all = JSON.stringify(lines);
  t.notOk(all.includes('secret-token'), 'no token in the lines');
  t.notOk(all.includes('secret-cookie'), 'no cookie in the lines');
  const incoming = lines.find((l) => l.msg === 'incoming request');
  t.match(incoming?.req, { method: 'GET', url: '/podInfo?podID=web&podNamespace=default' });
  t.same(lines.find((l) => l.msg === 'request completed')?.res, { statusCode: 200 });
  await app.close();
});

t.test('RequestLogger: a child without options is lazy too; its lines carry both bindings', async (t) => {
  const { logger, lines } = collecting('info');
  const request = new RequestLogger(logger, { reqId: 'req-9' });
  const session = request.child({ pod: 'default/web', stream: 'exec' });
  t.ok(session instanceof RequestLogger, 'a lazy child');
  session.debug('dropped');
  t.equal((session as RequestLogger).made, false, 'nothing made for a dropped line');
  t.equal(request.made, false, 'nor for its parent');
  session.warn({ reason: 'x' }, 'protocol violation');
  request.info('request line');
  t.match(lines, [
    { level: 40, reqId: 'req-9', pod: 'default/web', stream: 'exec', reason: 'x', msg: 'protocol violation' },
    { level: 30, reqId: 'req-9', msg: 'request line' },
  ]);
  t.notOk('pod' in (lines[1] ?? {}), 'the parent\'s lines carry only its own bindings');
  t.equal(session.level, 'info');
});
