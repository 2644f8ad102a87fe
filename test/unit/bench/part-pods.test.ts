import t from 'tap';
import { parse } from 'yaml';
import { extraManifests, FRESHNESS_POD, IDLE_CONTAINERS, IDLE_POD, PF_POD, SCALE_CONTAINERS, SCALE_POD } from '../../../bench/lib/part-pods.js';
import { rotated } from '../../../bench/lib/stats.js';

interface Manifest {
  metadata: { name: string };
  spec: { restartPolicy: string; containers: { name: string; command: string[] }[] };
}
const parsed = (text: string | undefined): Manifest => parse(text ?? '') as Manifest;

t.test('a static pod per selected part that needs one, none for the others', async (t) => {
  const all = extraManifests(new Set(['freshness', 'sessions', 'scale', 'portforward', 'http', 'stdout']), { freshnessSamples: 3, pfBytes: 4 * 1024 ** 2 });
  t.same(Object.keys(all).sort(), [FRESHNESS_POD, IDLE_POD, PF_POD, SCALE_POD].sort());
  t.same(extraManifests(new Set(['http', 'stdout', 'cluster']), { freshnessSamples: 3, pfBytes: 1024 ** 2 }), {});
});

t.test('the pods are what the parts kill, exec into and forward to', async (t) => {
  const m = extraManifests(new Set(['freshness', 'sessions', 'scale', 'portforward']), { freshnessSamples: 3, pfBytes: 4 * 1024 ** 2 });
  const victims = parsed(m[FRESHNESS_POD]);
  t.equal(victims.metadata.name, FRESHNESS_POD);
  t.equal(victims.spec.restartPolicy, 'Never', 'a killed container stays terminated');
  t.same(victims.spec.containers.map((c) => c.name), ['v0', 'v1', 'v2'], 'one container per freshness sample');
  t.equal(parsed(m[IDLE_POD]).spec.containers.length, IDLE_CONTAINERS);
  t.equal(parsed(m[SCALE_POD]).spec.containers.length, SCALE_CONTAINERS);
  const pf = parsed(m[PF_POD]).spec.containers;
  t.equal(pf.length, 1);
  t.match(pf[0]!.command.join(' '), /count=4 .*httpd -f -p 127\.0\.0\.1:8080/, 'serves a file of --pf-mib MiB on 127.0.0.1:8080');
});

t.test('rotated: every variant leads one round, the cyclic order kept', async (t) => {
  const xs = ['direct', 'cli', 'websocket', 'spdy'];
  t.same(rotated(xs, 0), xs);
  t.same(rotated(xs, 1), ['cli', 'websocket', 'spdy', 'direct']);
  t.same(rotated(xs, 5), rotated(xs, 1));
  t.same(new Set(xs.map((_, r) => rotated(xs, r)[0])), new Set(xs));
});
