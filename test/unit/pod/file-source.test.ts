import { mkdir, mkdtemp, rename, rm, symlink, unlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t, { type Test } from 'tap';
import { pino } from 'pino';
import type { Pod } from '../../../src/api/types.js';
import { StaticPodDirSource } from '../../../src/pod/file-source.js';
import type * as FileSource from '../../../src/pod/file-source.js';

const podYAML = (name: string, image = 'nginx:1.25') => `apiVersion: v1
kind: Pod
metadata:
  name: ${name}
spec:
  containers:
    - name: app
      image: ${image}
`;

interface Harness {
  dir: string;
  source: StaticPodDirSource;
  errors: Array<[string, string]>;
  warnings: string[];
  /** The next snapshot, or a rejection after `ms`. */
  next(ms?: number): Promise<Pod[]>;
  /** Resolves true if no snapshot arrives within `ms`. */
  quiet(ms: number): Promise<boolean>;
}

async function harness(t: Test, opts: { sub?: string } = {}): Promise<Harness> {
  const root = await mkdtemp(join(tmpdir(), 'nodelet-static-'));
  const dir = opts.sub ? join(root, opts.sub) : root;
  const errors: Array<[string, string]> = [];
  const warnings: string[] = [];
  const log = pino({ level: 'warn' }, { write: (s: string) => void warnings.push((JSON.parse(s) as { msg: string }).msg) });
  let clock = Date.parse('2026-01-01T00:00:00Z');
  const source = new StaticPodDirSource({
    dir,
    nodeName: 'Node1',
    intervalMs: 40,
    debounceMs: 20,
    log,
    onError: (file, message) => void errors.push([file, message]),
    now: () => new Date((clock += 1000)),
  });
  const queue: Pod[][] = [];
  const waiters: Array<(p: Pod[]) => void> = [];
  source.start((pods) => {
    const w = waiters.shift();
    if (w) w(pods);
    else queue.push(pods);
  });
  t.teardown(async () => {
    await source.stop();
    await rm(root, { recursive: true, force: true });
  });
  const next = (ms = 2000) =>
    new Promise<Pod[]>((resolve, reject) => {
      const queued = queue.shift();
      if (queued) return resolve(queued);
      const timer = setTimeout(() => {
        waiters.splice(waiters.indexOf(done), 1);
        reject(new Error(`no snapshot within ${ms} ms`));
      }, ms);
      const done = (p: Pod[]) => {
        clearTimeout(timer);
        resolve(p);
      };
      waiters.push(done);
    });
  const quiet = async (ms: number) => {
    try {
      await next(ms);
      return false;
    } catch {
      return true;
    }
  };
  return { dir, source, errors, warnings, next, quiet };
}

/** Writes atomically (via an ignored dotfile), so a scan never sees a half-written manifest. */
async function put(dir: string, name: string, content: string): Promise<void> {
  const tmp = join(dir, `.${name}.tmp`);
  await writeFile(tmp, content);
  await rename(tmp, join(dir, name));
}

const names = (pods: Pod[]) => pods.map((p) => p.metadata?.name);
const uids = (pods: Pod[]) => pods.map((p) => p.metadata?.uid);

t.test('add, change, delete; unchanged rescans emit nothing', async (t) => {
  const h = await harness(t);
  t.same(await h.next(), [], 'the first scan is always emitted');

  await put(h.dir, 'web.yaml', podYAML('web'));
  const added = await h.next();
  t.same(names(added), ['web-node1']);
  const web = added[0]!;
  t.match(web.metadata?.annotations, { 'kubernetes.io/config.source': 'file', 'kubernetes.io/config.hash': web.metadata?.uid });
  t.equal(web.spec?.nodeName, 'Node1');
  t.ok(await h.quiet(250), 'several rescans of an unchanged directory emit nothing');

  await put(h.dir, 'db.json', JSON.stringify({ apiVersion: 'v1', kind: 'Pod', metadata: { name: 'db' }, spec: { containers: [{ name: 'db', image: 'pg' }] } }));
  const two = await h.next();
  t.same(names(two), ['db-node1', 'web-node1'], 'sorted by file name');
  const web2 = two.find((p) => p.metadata?.name === 'web-node1');
  t.equal(web2?.metadata?.uid, web.metadata?.uid);
  t.equal(web2?.metadata?.annotations?.['kubernetes.io/config.seen'], web.metadata?.annotations?.['kubernetes.io/config.seen'], 'config.seen is stable for an unchanged pod');
  t.not(two[0]?.metadata?.annotations?.['kubernetes.io/config.seen'], web.metadata?.annotations?.['kubernetes.io/config.seen']);

  await put(h.dir, 'web.yaml', podYAML('web', 'nginx:1.26'));
  const changed = await h.next();
  const web3 = changed.find((p) => p.metadata?.name === 'web-node1');
  t.not(web3?.metadata?.uid, web.metadata?.uid, 'content change → new UID');
  t.equal(web3?.spec?.containers[0]?.image, 'nginx:1.26');

  await unlink(join(h.dir, 'web.yaml'));
  t.same(names(await h.next()), ['db-node1'], 'deleted file → its pod is gone');
  t.same(h.errors, []);
});

t.test('a broken file beside a good one: good pod emitted, onError once', async (t) => {
  const h = await harness(t);
  await h.next();
  await put(h.dir, 'broken.yaml', 'apiVersion: v1\nkind: Pod\nmetadata: [oops\n');
  await put(h.dir, 'good.yml', podYAML('good'));
  let pods = await h.next();
  // The two writes may land in one scan or two; wait for the good pod either way.
  while (pods.length === 0) pods = await h.next();
  t.same(names(pods), ['good-node1']);
  t.ok(await h.quiet(200));
  t.equal(h.errors.length, 1, 'reported once, not on every rescan');
  t.equal(h.errors[0]?.[0], join(h.dir, 'broken.yaml'));
  t.match(h.errors[0]?.[1], /invalid YAML/);

  await put(h.dir, 'broken.yaml', podYAML('fixed'));
  t.same(names(await h.next()), ['fixed-node1', 'good-node1']);
  await put(h.dir, 'broken.yaml', 'kind: Deployment\napiVersion: apps/v1\n');
  t.same(names(await h.next()), ['good-node1']);
  t.equal(h.errors.length, 2, 'a new problem after a fix is reported again');
  t.match(h.errors[1]?.[1], /Deployment/);
});

t.test('dotfiles, other extensions and directories are ignored', async (t) => {
  const h = await harness(t);
  await h.next();
  await put(h.dir, '.hidden.yaml', podYAML('hidden'));
  await put(h.dir, 'notes.txt', podYAML('txt'));
  await put(h.dir, 'web.yaml~', podYAML('backup'));
  await mkdir(join(h.dir, 'sub.yaml'));
  await writeFile(join(h.dir, 'sub.yaml', 'inner.yaml'), podYAML('inner'));
  t.ok(await h.quiet(250), 'nothing new to emit');
  await put(h.dir, 'Real.YAML', podYAML('real'));
  t.same(names(await h.next()), ['real-node1'], 'extensions match case-insensitively');
  t.same(h.errors, []);
});

t.test('a missing directory is an empty set with one warning, and is picked up later', async (t) => {
  const h = await harness(t, { sub: 'manifests' });
  t.same(await h.next(), []);
  t.ok(await h.quiet(200));
  t.same(h.warnings.filter((w) => /does not exist/.test(w)).length, 1, 'warned once');
  await mkdir(h.dir);
  await put(h.dir, 'late.yaml', podYAML('late'));
  t.same(names(await h.next()), ['late-node1']);
  await put(h.dir, 'later.yaml', podYAML('later'));
  t.same(names(await h.next()), ['late-node1', 'later-node1'], 'the new directory is watched/rescanned');
});

t.test('the same manifest in two files gives two UIDs', async (t) => {
  const h = await harness(t);
  await h.next();
  await put(h.dir, 'a.yaml', podYAML('same'));
  await put(h.dir, 'b.yaml', podYAML('same'));
  let pods = await h.next();
  while (pods.length < 2) pods = await h.next();
  t.equal(new Set(uids(pods)).size, 2, 'the file path is part of the hash (duplicates are PodConfig\'s job)');
});

t.test('stop ends scanning and emitting', async (t) => {
  const h = await harness(t);
  await h.next();
  t.throws(() => h.source.start(() => {}), /already started/);
  await h.source.stop();
  await put(h.dir, 'x.yaml', podYAML('x'));
  t.ok(await h.quiet(200), 'no snapshot after stop');
});

t.test('a poisonous manifest (nested 20,000 levels) fails alone: the other files keep being served', async (t) => {
  const h = await harness(t);
  await h.next();
  const deep = `${'['.repeat(20_000)}${']'.repeat(20_000)}`;
  await put(h.dir, 'a-good.yaml', podYAML('good'));
  await put(h.dir, 'deep.json', `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"deep"},"spec":{"x":${deep}}}`);
  await put(h.dir, 'deep.yaml', `apiVersion: v1\nkind: Pod\nmetadata: {name: deepy}\nspec:\n  x: ${deep}\n`);
  let pods = await h.next();
  while (!names(pods).includes('good-node1')) pods = await h.next();
  t.same(names(pods), ['good-node1']);
  // While the poisonous files stay, changes to the others still go through.
  await put(h.dir, 'b-new.yaml', podYAML('new'));
  t.same(names(await h.next()), ['good-node1', 'new-node1'], 'a new manifest starts');
  await unlink(join(h.dir, 'a-good.yaml'));
  t.same(names(await h.next()), ['new-node1'], 'a removed manifest stops');
  const byFile = new Map(h.errors);
  t.match(byFile.get(join(h.dir, 'deep.json')), /deep\.json: invalid JSON: nested deeper than 100 levels at line 1, column \d+$/);
  t.match(byFile.get(join(h.dir, 'deep.yaml')), /deep\.yaml: invalid YAML: nested deeper than 100 levels$/);
  t.equal(h.errors.length, 2, `each reported once: ${JSON.stringify(h.errors.map(([f, m]) => [f, m.slice(-60)]))}`);
  t.notOk(h.warnings.some((w) => /scan failed/.test(w)), 'the scan itself never failed');
});

t.test('a symlink to a secret file: its parse error names a position, never its bytes', async (t) => {
  const h = await harness(t);
  await h.next();
  const secretDir = await mkdtemp(join(tmpdir(), 'nodelet-secret-'));
  t.teardown(() => rm(secretDir, { recursive: true, force: true }));
  const shadow = join(secretDir, 'shadow');
  await writeFile(shadow, 'root:$6$s3cr3tHash:20200:0:99999:7:::\ndaemon:*:20200:0:99999:7:::\n');
  await symlink(shadow, join(h.dir, 'shadow.json'));
  await symlink(shadow, join(h.dir, 'shadow.yaml'));
  await put(h.dir, 'web.yaml', podYAML('web'));
  let pods = await h.next();
  while (pods.length === 0) pods = await h.next();
  await h.quiet(150);
  t.equal(h.errors.length, 2, `both links reported: ${JSON.stringify(h.errors)}`);
  for (const [, message] of h.errors) t.notMatch(message, /root|s3cr3t|20200|daemon/, `no byte of the target: ${message}`);
  // As YAML the file is a map (`…:::` ends in a key), so only its JSON reading is a syntax error.
  t.equal(new Map(h.errors).get(join(h.dir, 'shadow.json')), `${join(h.dir, 'shadow.json')}: invalid JSON: unexpected character at line 1, column 1`, 'but where');
});

t.test('a manifest over 1.5 MiB (etcd\'s object limit) is refused unparsed; one under it is parsed once, not on every rescan', async (t) => {
  const real = await import('../../../src/pod/manifest.js');
  const parsedFiles: string[] = [];
  const { StaticPodDirSource: Counting, MAX_MANIFEST_BYTES } = await t.mockImport<typeof FileSource>('../../../src/pod/file-source.js', {
    '../../../src/pod/manifest.js': { ...real, parseManifest: (text: string, file: string) => (parsedFiles.push(file), real.parseManifest(text, file)) },
  });
  t.equal(MAX_MANIFEST_BYTES, 1536 * 1024);
  const dir = await mkdtemp(join(tmpdir(), 'nodelet-static-'));
  const envLines = (bytes: number) => {
    let out = podYAML('big') + '      env:\n';
    for (let i = 0; out.length < bytes; i++) out += `        - name: VAR_${i}\n          value: "${'x'.repeat(40)}"\n`;
    return out;
  };
  await writeFile(join(dir, 'huge.yaml'), envLines(2_700_000));
  await writeFile(join(dir, 'ok.yaml'), podYAML('ok'));
  const errors: Array<[string, string]> = [];
  let scans: number;
  const snapshots: Pod[][] = [];
  const source = new Counting({ dir, nodeName: 'n', intervalMs: 30, debounceMs: 10, log: pino({ level: 'silent' }), onError: (f, m) => void errors.push([f, m]) });
  source.start((pods) => void snapshots.push(pods));
  t.teardown(async () => {
    await source.stop();
    await rm(dir, { recursive: true, force: true });
  });
  const { waitFor } = await import('../../helpers/wait.js');
  await waitFor('first scan', () => (snapshots.length >= 1 && errors.length >= 1 ? true : undefined), 10_000);
  t.same(errors, [[join(dir, 'huge.yaml'), `${join(dir, 'huge.yaml')}: manifest is larger than 1572864 bytes (the largest object etcd stores), refused unparsed`]]);
  t.same(snapshots[0]?.map((p) => p.metadata?.name), ['ok-n']);
  t.same(parsedFiles, [join(dir, 'ok.yaml')], 'the huge file was never parsed');
  // Several rescans: a marker file changes each time and is parsed; ok.yaml is not parsed again.
  for (scans = 1; scans <= 3; scans++) {
    await writeFile(join(dir, 'marker.yaml'), podYAML(`marker-${scans}`));
    const name = `marker-${scans}-n`;
    await waitFor(`rescan ${scans}`, () => (snapshots.at(-1)?.some((p) => p.metadata?.name === name) ? true : undefined), 10_000);
  }
  t.equal(parsedFiles.filter((f) => f.endsWith('ok.yaml')).length, 1, 'ok.yaml parsed once');
  t.equal(errors.length, 1, 'the huge file reported once');
});

t.test('a static pod that references an API object is refused, its file reported; the other documents run', async (t) => {
  const h = await harness(t);
  await h.next();
  const withSecret = `apiVersion: v1
kind: Pod
metadata: { name: creds }
spec:
  volumes: [{ name: c, secret: { secretName: db } }]
  containers: [{ name: app, image: nginx:1.25 }]
`;
  await put(h.dir, 'mixed.yaml', `${withSecret}---\n${podYAML('plain')}`);
  let pods = await h.next();
  while (pods.length === 0) pods = await h.next();
  t.same(names(pods), ['plain-node1']);
  t.same(h.errors, [[join(h.dir, 'mixed.yaml'), `${join(h.dir, 'mixed.yaml')}: pod "creds" static pods may not reference secrets`]]);
});
