import t from 'tap';
import { negotiateZPage, unixDate } from '../../../src/server/plugins/zpages.js';
import { flagzValues, goDuration, kubeletConfiguration } from '../../../src/config/index.js';
import { build, FakeHost, ZPAGES } from './fixtures/fake-host.js';
import { buildConfig } from '../../../src/config/index.js';

t.test('negotiation: text by default, structured only by kind, group and version', async (t) => {
  t.same(negotiateZPage(undefined, 'Flagz'), { form: 'text' });
  t.same(negotiateZPage('*/*', 'Flagz'), { form: 'text' });
  t.same(negotiateZPage('application/json;as=Flagz;v=v1beta1;g=config.k8s.io', 'Flagz'), { form: 'json', version: 'v1beta1' });
  t.same(negotiateZPage('application/yaml;as=Statusz;v=v1alpha1;g=config.k8s.io', 'Statusz'), { form: 'yaml', version: 'v1alpha1' });
  t.equal(negotiateZPage('application/json', 'Flagz'), undefined, 'plain JSON is not offered');
  t.equal(negotiateZPage('application/json;as=Statusz;v=v1beta1;g=config.k8s.io', 'Flagz'), undefined, 'another kind');
  t.equal(negotiateZPage('application/json;as=Flagz;v=v2;g=config.k8s.io', 'Flagz'), undefined, 'an unknown version');
  t.same(negotiateZPage('application/json;as=Flagz;v=v1beta1;g=config.k8s.io;q=0.5, text/plain', 'Flagz'), { form: 'text' }, 'by quality');
});

t.test('Go formats: durations and UnixDate', async (t) => {
  t.same([0, 500, 1000, 1500, 60_000, 90_000, 4 * 3600_000, 3_661_000].map(goDuration), ['0s', '500ms', '1s', '1.5s', '1m0s', '1m30s', '4h0m0s', '1h1m1s']);
  t.equal(unixDate(new Date(Date.UTC(2026, 11, 3, 9, 5, 7))), 'Thu Dec  3 09:05:07 UTC 2026');
});

t.test('/configz and /flagz of a real configuration: KubeletConfiguration names, pflag values', async (t) => {
  const built = buildConfig(['--port=10260', '--sync-frequency=30s', '--cni-bin-dir=/a,/b'], {}, { hostname: 'h', interfaces: {} });
  if ('help' in built) throw new Error('help');
  const kc = kubeletConfiguration(built.config);
  t.same([kc.kind, kc.apiVersion, kc.port, kc.syncFrequency, (kc.authentication as { anonymous?: { enabled?: boolean } }).anonymous?.enabled], ['KubeletConfiguration', 'kubelet.config.k8s.io/v1beta1', 10260, '30s', false]);
  const flags = flagzValues(built.config);
  t.same([flags.port, flags['sync-frequency'], flags['cni-bin-dir'], flags.help, flags.config], ['10260', '30s', '[/a,/b]', undefined, undefined]);
});

t.test('the routes: text with the warning, structured JSON, 406 with a Status', async (t) => {
  const app = build(new FakeHost(), { zpages: ZPAGES });
  t.teardown(() => app.close());
  const text = await app.inject({ url: '/flagz' });
  t.equal(text.statusCode, 200);
  t.match(text.headers['content-type'], /^text\/plain/);
  t.match(text.body, /^\nkubelet flagz\nWarning: This endpoint is not meant to be machine parseable/);
  t.match(text.body, /\nport(:|: |=| )10250\nv(:|: |=| )2\n$/, 'sorted name-delimiter-value lines');
  const json = await app.inject({ url: '/flagz', headers: { accept: 'application/json;as=Flagz;v=v1beta1;g=config.k8s.io' } });
  t.same(JSON.parse(json.body), { kind: 'Flagz', apiVersion: 'config.k8s.io/v1beta1', metadata: { name: 'kubelet' }, flags: { port: '10250', v: '2' } });
  const old = await app.inject({ url: '/statusz', headers: { accept: 'application/json;as=Statusz;v=v1alpha1;g=config.k8s.io' } });
  t.match(old.headers.warning, /deprecated/);
  const s = JSON.parse(old.body) as { startTime: string; paths: string[]; goVersion: string };
  t.equal(s.startTime, '2026-12-03T09:05:07Z');
  t.ok(s.paths.includes('/healthz') && s.paths.includes('/flagz') && !s.paths.includes('/api'), `paths: ${s.paths.join(' ')}`);
  t.match(s.goVersion, /Node\.js/);
  const st = await app.inject({ url: '/statusz' });
  t.match(st.body, /Started(:|: |=| ) Thu Dec {2}3 09:05:07 UTC 2026\n/);
  const refused = await app.inject({ url: '/flagz', headers: { accept: 'application/json' } });
  t.equal(refused.statusCode, 406);
  t.match(JSON.parse(refused.body), { kind: 'Status', reason: 'NotAcceptable', code: 406 });
  const cz = await app.inject({ url: '/configz' });
  t.same(JSON.parse(cz.body), { kubeletconfig: ZPAGES.configz() });
});
