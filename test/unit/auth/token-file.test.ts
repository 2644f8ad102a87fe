import type { IncomingMessage } from 'node:http';
import t from 'tap';
import { UnionAuthenticator } from '../../../src/auth/authenticator.js';
import { TokenFileAuthenticator, bearerToken, parseCsv } from '../../../src/auth/token-file.js';

const req = (authorization?: string) => ({ headers: authorization === undefined ? {} : { authorization }, socket: {} }) as unknown as IncomingMessage;

t.test('CSV as Go encoding/csv reads it', async (t) => {
  t.same(parseCsv('a,b,c,"g1,g2"\n\nd,e,f\r\n'), [['a', 'b', 'c', 'g1,g2'], ['d', 'e', 'f']]);
  t.same(parseCsv(' a, "b ""q""",c'), [['a', 'b "q"', 'c']]);
  t.same(parseCsv('a,,c,""\n'), [['a', '', 'c', '']]);
  t.throws(() => parseCsv('a,"b'), /unterminated quoted field/);
});

t.test('token file: users, uids, groups; bad records', async (t) => {
  const warnings: string[] = [];
  const authn = TokenFileAuthenticator.fromText('tok1,alice,100,"dev, ops"\ntok2,bob,101\n,nobody,0\ntok2,bob2,102\n', warnings);
  t.equal(authn.size, 2);
  t.same(authn.authenticate(req('Bearer tok1')), { ok: true, user: { name: 'alice', uid: '100', groups: ['dev', 'ops'] } });
  t.same(authn.authenticate(req('bearer tok2')), { ok: true, user: { name: 'bob2', uid: '102', groups: [] } }, 'last duplicate wins');
  t.same(authn.authenticate(req('Bearer nope')), { ok: false, error: 'invalid bearer token' });
  t.same(authn.authenticate(req()), { ok: false });
  t.same(authn.authenticate(req('Basic dG9rMTp4')), { ok: false }, 'another scheme: no opinion');
  t.equal(warnings.length, 2);
  for (const w of warnings) t.notMatch(w, /tok[12]/, 'warnings never carry a token');
  t.throws(() => TokenFileAuthenticator.fromText('tok,alice\n'), /record 1 must have at least 3 columns/);
  t.throws(() => TokenFileAuthenticator.fromFile('/nonexistent/tokens.csv'), /cannot read token file/);
});

t.test('bearerToken', async (t) => {
  t.equal(bearerToken('Bearer abc'), 'abc');
  t.equal(bearerToken('BEARER abc'), 'abc');
  t.equal(bearerToken('Bearer '), undefined);
  t.equal(bearerToken('Bearer'), undefined);
  t.equal(bearerToken(undefined), undefined);
});

t.test('union: first user wins, system:authenticated added, errors never become anonymous', async (t) => {
  const tokens = TokenFileAuthenticator.fromText('tok1,alice,1\n');
  const anon = new UnionAuthenticator([tokens], true);
  t.same(anon.authenticate(req('Bearer tok1')), { ok: true, user: { name: 'alice', uid: '1', groups: ['system:authenticated'] } });
  t.same(anon.authenticate(req()), { ok: true, user: { name: 'system:anonymous', uid: '', groups: ['system:unauthenticated'] } });
  t.same(anon.authenticate(req('Bearer bad')), { ok: false, error: 'invalid bearer token' });
  t.same(new UnionAuthenticator([tokens], false).authenticate(req()), { ok: false });
});
