import t from 'tap';
import { pino } from 'pino';
import { StatusError, plainText } from '../../../src/api/errors.js';
import type { Status } from '../../../src/api/types.js';
import { buildServer } from '../../../src/server/index.js';
import { FakeHost } from './fixtures/fake-host.js';

/**
 * The single error handler, exercised through probe routes that stand in for future plugins:
 * every failure must leave as a Status with the right code and `application/json`.
 */
function probeApp() {
  const app = buildServer({ host: new FakeHost(), logger: pino({ level: 'silent' }), version: { gitVersion: 'v1.30.0' }, bodyLimit: 64 });
  app.post('/probe/body', async (request) => ({ got: request.body }));
  app.post(
    '/probe/schema',
    { schema: { body: { type: 'object', required: ['name'], properties: { name: { type: 'string' } } } } },
    async () => ({ ok: true }),
  );
  app.get('/probe/status-error', async () => {
    throw new StatusError('Conflict', 'pods "x" already exists');
  });
  app.get('/probe/plain-text', async () => {
    throw plainText('NotFound', 'Pod does not exist');
  });
  app.get('/probe/docker-error', async () => {
    // dockerode errors carry an HTTP statusCode from the daemon: that is not the client's 404.
    throw Object.assign(new Error('(HTTP code 404) no such container'), { statusCode: 404, code: 'ENOENT' });
  });
  return app;
}

function status(res: { body: string }): Status {
  return JSON.parse(res.body) as Status;
}

t.test('malformed JSON body: 400 BadRequest Status', async (t) => {
  const res = await probeApp().inject({ method: 'POST', url: '/probe/body', headers: { 'content-type': 'application/json' }, payload: '{nope' });
  t.equal(res.statusCode, 400);
  t.equal(res.headers['content-type'], 'application/json');
  t.match(status(res), { kind: 'Status', status: 'Failure', reason: 'BadRequest', code: 400 });
});

t.test('schema validation failure: 400 BadRequest Status', async (t) => {
  const res = await probeApp().inject({ method: 'POST', url: '/probe/schema', payload: { other: 1 } });
  t.equal(res.statusCode, 400);
  t.match(status(res), { reason: 'BadRequest', code: 400, message: /name/ });
});

t.test('bodyLimit is honoured: 413 RequestEntityTooLarge', async (t) => {
  const res = await probeApp().inject({ method: 'POST', url: '/probe/body', payload: { x: 'y'.repeat(200) } });
  t.equal(res.statusCode, 413);
  t.match(status(res), { reason: 'RequestEntityTooLarge', code: 413 });
});

t.test('StatusError keeps its code and reason', async (t) => {
  const res = await probeApp().inject('/probe/status-error');
  t.equal(res.statusCode, 409);
  t.same(status(res), {
    kind: 'Status',
    apiVersion: 'v1',
    metadata: {},
    status: 'Failure',
    message: 'pods "x" already exists',
    reason: 'Conflict',
    code: 409,
  });
});

t.test('a non-Fastify error with a statusCode is still a 500', async (t) => {
  const res = await probeApp().inject('/probe/docker-error');
  t.equal(res.statusCode, 500);
  t.match(status(res), { reason: 'InternalError', code: 500, message: /no such container/ });
});

t.test("a StatusError with wire 'text' is the kubelet's http.Error: its code, text/plain, nosniff, the message and a newline", async (t) => {
  const res = await probeApp().inject('/probe/plain-text');
  t.equal(res.statusCode, 404);
  t.equal(res.headers['content-type'], 'text/plain; charset=utf-8');
  t.equal(res.headers['x-content-type-options'], 'nosniff');
  t.equal(res.body, 'Pod does not exist\n');
  const err = plainText('Forbidden', 'no');
  t.ok(err instanceof StatusError);
  t.match(err, { reason: 'Forbidden', code: 403, wire: 'text' });
  t.equal(new StatusError('Forbidden', 'no').wire, 'status', 'a Status by default');
});
