import t from 'tap';
import {
  Keyring,
  decodeAuthField,
  globMatch,
  isDefaultRegistryMatch,
  keyringFromSecrets,
  locationMatches,
  parseDockerConfigJson,
  parseDockercfg,
  repositoryOf,
  type PullSecret,
} from '../../../src/kubelet/keyring.js';

const b64 = (s: string) => Buffer.from(s).toString('base64');
const entry = (username: string, password = 'pw') => ({ username, password });
const keyring = (...configs: Record<string, { username: string; password: string }>[]) => {
  const k = new Keyring();
  for (const c of configs) k.add(Object.entries(c));
  return k;
};
const users = (k: Keyring, repo: string) => k.lookup(repo).map((a) => a.username);

t.test('repositoryOf: the normalized repository, as the kubelet looks it up', async (t) => {
  t.equal(repositoryOf('busybox'), 'docker.io/library/busybox');
  t.equal(repositoryOf('busybox:1.35'), 'docker.io/library/busybox');
  t.equal(repositoryOf('google/pause'), 'docker.io/google/pause');
  t.equal(repositoryOf('index.docker.io/library/nginx:1'), 'docker.io/library/nginx');
  t.equal(repositoryOf('docker.io/nginx'), 'docker.io/library/nginx');
  t.equal(repositoryOf('127.0.0.1:5000/team/app:v1'), '127.0.0.1:5000/team/app');
  t.equal(repositoryOf('localhost/app'), 'localhost/app');
  t.equal(repositoryOf('registry.example/app@sha256:abcd'), 'registry.example/app');
  t.equal(repositoryOf('registry.example:443/app:1@sha256:abcd'), 'registry.example:443/app');
});

t.test('globMatch: filepath.Match for one host part', async (t) => {
  t.ok(globMatch('*', 'anything'));
  t.ok(globMatch('*-good', 'prefix-good'));
  t.notOk(globMatch('*-good', 'prefix-bad'));
  t.ok(globMatch('k?s', 'k8s'));
  t.ok(globMatch('[a-c]x', 'bx'));
  t.notOk(globMatch('[^a-c]x', 'bx'));
  t.notOk(globMatch('[', '['), 'malformed patterns match nothing');
  t.ok(globMatch('a.b', 'a.b'), 'regexp characters are literal');
  t.notOk(globMatch('a.b', 'axb'));
});

t.test('locationMatches: host parts, port and path prefix (keyring_test.go TestURLsMatch)', async (t) => {
  const cases: [string, string, boolean][] = [
    ['*.kubernetes.io', 'prefix.kubernetes.io', true],
    ['prefix.*.io', 'prefix.kubernetes.io', true],
    ['*-good.kubernetes.io', 'prefix-good.kubernetes.io', true],
    ['*.*.io', 'prefix.kubernetes.io', true],
    ['*.kubernetes.io', 'kubernetes.io', false],
    ['*.kubernetes.io', 'a.b.kubernetes.io', false],
    ['*.io', 'kubernetes.io', true],
    ['kubernetes.io', 'kubernetes.io/path', true],
    ['kubernetes.io/path', 'kubernetes.io/path/subpath', true],
    ['kubernetes.io/path', 'kubernetes.io', false],
    ['kubernetes.io/path', 'kubernetes.io/other', false],
    ['kubernetes.io:8080', 'kubernetes.io', false],
    ['kubernetes.io', 'kubernetes.io:8080', false],
    ['kubernetes.io:8080', 'kubernetes.io:8080/app', true],
    ['*.kubernetes.io:8080', 'prefix.kubernetes.io:8080/app', true],
    ['127.0.0.1:5000', '127.0.0.1:5000/busybox', true],
    ['127.0.0.1:5001', '127.0.0.1:5000/busybox', false],
    ['kubernetes.io:abc', 'kubernetes.io:abc/app', false],
  ];
  for (const [glob, target, want] of cases) t.equal(locationMatches(glob, target), want, `${glob} ~ ${target}`);
});

t.test('isDefaultRegistryMatch: Docker Hub repositories', async (t) => {
  t.ok(isDefaultRegistryMatch('jenkins'));
  t.ok(isDefaultRegistryMatch('google/docker-registry'));
  t.ok(isDefaultRegistryMatch('docker.io/library/busybox'));
  t.ok(isDefaultRegistryMatch('index.docker.io/library/busybox'));
  t.notOk(isDefaultRegistryMatch('world.mesos.org/foo/bar'));
  t.notOk(isDefaultRegistryMatch('localhost:5000/foo'));
  t.notOk(isDefaultRegistryMatch(''));
});

t.test('Keyring: locations with scheme, /v1/ and /v2/ paths, most specific first, several per location', async (t) => {
  const k = keyring(
    { 'https://quay.io': entry('host'), 'quay.io/coreos': entry('team') },
    { 'http://quay.io/v2/': entry('host-again') },
    { 'https://*.registry.example:5000/v1/': entry('wild') },
  );
  t.same(users(k, 'quay.io/coreos/etcd'), ['team', 'host', 'host-again'], 'the path location before the host, both locations returned, duplicates kept in order');
  t.same(users(k, 'quay.io/other/x'), ['host', 'host-again']);
  t.same(users(k, 'a.registry.example:5000/app'), ['wild']);
  t.same(users(k, 'registry.example:5000/app'), [], 'a wildcard needs a host part of its own');
  t.same(users(k, 'a.registry.example/app'), [], 'the port must match');
  t.same(users(k, 'world.mesos.org/foo/bar'), []);
});

t.test('Keyring: Docker Hub credentials serve Docker Hub images only', async (t) => {
  const k = keyring({ 'https://index.docker.io/v1/': entry('hub') });
  t.same(users(k, repositoryOf('jenkins')), ['hub']);
  t.same(users(k, repositoryOf('google/docker-registry')), ['hub']);
  t.same(users(k, 'world.mesos.org/foo/bar'), []);
  t.same(users(k, '127.0.0.1:5000/busybox'), []);
  // A location naming docker.io itself matches the normalized repository directly.
  t.same(users(keyring({ 'docker.io': entry('direct') }), repositoryOf('busybox')), ['direct']);
});

t.test('decodeAuthField: padded and unpadded base64 of username:password', async (t) => {
  t.same(decodeAuthField(b64('user:pass')), { username: 'user', password: 'pass' });
  t.same(decodeAuthField(b64('user:pa:ss')), { username: 'user', password: 'pa:ss' }, 'only the first colon splits');
  t.same(decodeAuthField(b64('u:p1').replace(/=+$/, '')), { username: 'u', password: 'p1' }, 'unpadded');
  t.throws(() => decodeAuthField(b64('nocolon')), /base64\(username:password\)/);
  t.throws(() => decodeAuthField('not base64!'), /illegal base64/);
  t.throws(() => decodeAuthField('abc=d'), /illegal base64/);
});

t.test('parseDockerConfigJson and parseDockercfg', async (t) => {
  const json = JSON.stringify({
    auths: {
      'registry.example': { auth: b64('a:b'), username: 'ignored', password: 'ignored', email: 'a@example' },
      'other.example': { username: 'u', password: 'p' },
    },
    HttpHeaders: { 'X-Meta': 'x' },
  });
  t.same(parseDockerConfigJson(json), [
    ['registry.example', { username: 'a', password: 'b', email: 'a@example' }],
    ['other.example', { username: 'u', password: 'p' }],
  ]);
  t.same(parseDockerConfigJson('{}'), [], 'no auths: no credentials');
  t.same(parseDockercfg(JSON.stringify({ 'https://index.docker.io/v1/': { auth: b64('x:y') } })), [['https://index.docker.io/v1/', { username: 'x', password: 'y' }]]);
  t.throws(() => parseDockerConfigJson('{'));
  t.throws(() => parseDockerConfigJson('[]'), /JSON object/);
  t.throws(() => parseDockerConfigJson(JSON.stringify({ auths: { r: { username: 5 } } })), /must be a string/);
});

t.test('keyringFromSecrets: the two docker config secret types, others ignored, malformed ones named', async (t) => {
  const data = (key: string, doc: unknown) => ({ [key]: Buffer.from(JSON.stringify(doc)) });
  const secrets: PullSecret[] = [
    { name: 'opaque', type: 'Opaque', data: data('.dockerconfigjson', { auths: { 'r.example': entry('opaque') } }) },
    { name: 'json', type: 'kubernetes.io/dockerconfigjson', data: data('.dockerconfigjson', { auths: { 'r.example': entry('json') } }) },
    { name: 'cfg', type: 'kubernetes.io/dockercfg', data: data('.dockercfg', { 'r.example': entry('cfg') }) },
    { name: 'wrong-key', type: 'kubernetes.io/dockercfg', data: data('.dockerconfigjson', { auths: { 'r.example': entry('wrong') } }) },
    { name: 'empty', type: 'kubernetes.io/dockerconfigjson', data: { '.dockerconfigjson': Buffer.alloc(0) } },
  ];
  t.same(users(keyringFromSecrets(secrets), 'r.example/app'), ['json', 'cfg'], 'secret order kept for one location');
  const bad: PullSecret = { name: 'broken', type: 'kubernetes.io/dockerconfigjson', data: { '.dockerconfigjson': Buffer.from('{"auths": {"r": {"auth": "c2VjcmV0"}}}') } };
  const err = (() => {
    try {
      keyringFromSecrets([bad]);
    } catch (e) {
      return e as Error;
    }
    return undefined;
  })();
  t.match(err?.message, /^image pull secret "broken": invalid \.dockerconfigjson: unable to parse auth field/);
  t.notMatch(err?.message, /c2VjcmV0|secret$/, 'the data is not in the message');
});
