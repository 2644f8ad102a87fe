import t from 'tap';
import { connectFailureReason, isValidPort, parseDialAnswer, parseDialRequest, timeoutReason } from '../../../src/runtime/docker/portforward-protocol.js';

t.test('dial requests: well-formed ones parse, anything else is ignored', async (t) => {
  t.same(parseDialRequest({ op: 'dial', id: 0, port: 8080 }), { op: 'dial', id: 0, port: 8080 });
  t.same(parseDialRequest({ op: 'dial', id: 7, port: 70000, extra: true }), { op: 'dial', id: 7, port: 70000 }, 'a bad port still parses: it gets a `failed` answer');
  for (const bad of [null, undefined, 'dial', 42, [], {}, { op: 'dial' }, { op: 'dial', id: -1, port: 80 }, { op: 'dial', id: 1.5, port: 80 }, { op: 'dial', id: '1', port: 80 }, { op: 'dial', id: 1, port: '80' }, { op: 'connect', id: 1, port: 80 }]) {
    t.equal(parseDialRequest(bad), undefined, JSON.stringify(bad) ?? String(bad));
  }
  // A host is kept for the helper to check (an IP literal, else refused there); other fields are dropped.
  t.same(parseDialRequest({ op: 'dial', id: 1, port: 80, host: '10.0.0.1', extra: true }), { op: 'dial', id: 1, port: 80, host: '10.0.0.1' }, 'a host field is kept, others dropped');
  t.equal(parseDialRequest({ op: 'dial', id: 1, port: 80, host: 7 }), undefined, 'a host that is not a string');
});

t.test('answers: dialed and failed parse; malformed ones do not', async (t) => {
  t.same(parseDialAnswer({ op: 'dialed', id: 3 }), { op: 'dialed', id: 3 });
  t.same(parseDialAnswer({ op: 'failed', id: 4, reason: 'x' }), { op: 'failed', id: 4, reason: 'x' });
  for (const bad of [null, 'dialed', { op: 'dialed' }, { op: 'failed', id: 4 }, { op: 'failed', id: 4, reason: 1 }, { op: 'other', id: 1 }, { op: 'dialed', id: -2 }]) {
    t.equal(parseDialAnswer(bad), undefined, JSON.stringify(bad));
  }
});

t.test('ports', async (t) => {
  for (const p of [1, 80, 65535]) t.ok(isValidPort(p), String(p));
  for (const p of [0, -1, 65536, 1.5, Number.NaN, '80', undefined]) t.notOk(isValidPort(p), String(p));
});

t.test('failure reasons keep socat\'s shape, which clients and tests match', async (t) => {
  t.equal(connectFailureReason(9999, { code: 'ECONNREFUSED', message: 'connect ECONNREFUSED 127.0.0.1:9999' }), 'exit status 1: connect(AF=2 127.0.0.1:9999): Connection refused');
  t.match(connectFailureReason(80, { code: 'ETIMEDOUT' }), /: Connection timed out$/);
  t.equal(connectFailureReason(80, { code: 'EMFILE', message: 'connect EMFILE 127.0.0.1:80' }), 'exit status 1: connect(AF=2 127.0.0.1:80): connect EMFILE 127.0.0.1:80', 'an unlisted code keeps Node\'s message');
  t.equal(connectFailureReason(80, {}), 'exit status 1: connect(AF=2 127.0.0.1:80): connect failed');
  t.equal(timeoutReason(80, 12_000), 'exit status 1: connect(AF=2 127.0.0.1:80): no answer within 12 s');
  t.equal(connectFailureReason(80, { code: 'EHOSTUNREACH' }, '10.244.1.9'), 'exit status 1: connect(AF=2 10.244.1.9:80): No route to host', 'the address a probe named');
  t.equal(timeoutReason(80, 12_000, 'fd00::1'), 'exit status 1: connect(AF=10 [fd00::1]:80): no answer within 12 s');
});
