import { createHash, randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { gzipSync } from 'node:zlib';
import t from 'tap';
import type { Secret } from 'kubernetes-types/core/v1.js';
import type { Pod } from '../../src/api/types.js';
import { EventRecorder } from '../../src/events/recorder.js';
import { Backoff } from '../../src/kubelet/backoff.js';
import { Kubelet } from '../../src/kubelet/kubelet.js';
import { createLogger } from '../../src/logging/index.js';
import { PodManager } from '../../src/pod/manager.js';
import { DockerRuntime } from '../../src/runtime/docker/runtime.js';
import { ensureImageExists } from '../../src/kubelet/images.js';
import { ImagePullManager } from '../../src/kubelet/image-pull-manager.js';
import { verificationEnforcer } from '../../src/kubelet/pull-records.js';
import { StatusManager } from '../../src/status/manager.js';
import type { PodObjectSource } from '../../src/volumes/source.js';
import { BUSYBOX, removeNodeContainers, testDocker } from '../helpers/docker.js';
import { waitFor } from '../helpers/wait.js';

/**
 * imagePullSecrets against the real engine and a registry written here: a Node HTTP server on
 * 127.0.0.1 (which Docker treats as an insecure registry, so plain HTTP) implementing just enough
 * of the registry v2 API — `GET /v2/`, manifests and blobs — to serve the locally built busybox
 * image (from `docker save`), behind HTTP Basic authentication. Checked: the runtime's pull with
 * no, wrong, and several credentials; and through the kubelet's sync (pull secrets read from an
 * object source, as cluster mode's apiserver reader), a pod whose secret matches runs, one whose
 * secret holds a wrong password waits with ErrImagePull / ImagePullBackOff saying unauthorized;
 * with the image pull manager (KubeletEnsureSecretPulledImages), an image one pod pulled with its
 * secret is not handed to a pod without that secret or its credentials.
 */
t.setTimeout(180_000);

const USER = 'puller';
const PASSWORD = `pw-${randomBytes(6).toString('hex')}`;
const docker = testDocker();
const log = createLogger({ verbosity: 0, format: 'json' });

/** The files of a tar archive (`docker save` output: regular files only matter). */
function untar(buf: Buffer): Map<string, Buffer> {
  const files = new Map<string, Buffer>();
  let off = 0;
  while (off + 512 <= buf.length) {
    const header = buf.subarray(off, off + 512);
    if (header.every((b) => b === 0)) break;
    const field = (start: number, len: number) => header.subarray(start, start + len).toString('latin1').replace(/\0.*$/s, '');
    const prefix = field(345, 155);
    const name = prefix ? `${prefix}/${field(0, 100)}` : field(0, 100);
    const size = parseInt(field(124, 12).trim() || '0', 8);
    const type = field(156, 1);
    off += 512;
    if (type === '0' || type === '') files.set(name, buf.subarray(off, off + size));
    off += Math.ceil(size / 512) * 512;
  }
  return files;
}

const sha256 = (b: Buffer) => `sha256:${createHash('sha256').update(b).digest('hex')}`;

interface Registry {
  readonly host: string;
  /** Requests by path and whether they carried the right credentials (`GET /v2/ ok`). */
  readonly requests: string[];
  close(): Promise<void>;
}

/** A registry serving `image` (as saved by the engine) as `<any name>:<any tag>`, for USER:PASSWORD only. */
async function startRegistry(image: string): Promise<Registry> {
  const saved = untar(Buffer.from(await new Promise<Buffer>((resolve, reject) => {
    docker.getImage(image).get((err: Error | null, stream?: NodeJS.ReadableStream) => {
      if (err || !stream) return reject(err ?? new Error('no stream'));
      const chunks: Buffer[] = [];
      stream.on('data', (c: Buffer) => chunks.push(c));
      stream.on('end', () => resolve(Buffer.concat(chunks)));
      stream.on('error', reject);
    });
  })));
  const [entry] = JSON.parse(saved.get('manifest.json')?.toString() ?? '[]') as { Config: string; Layers: string[] }[];
  if (!entry) throw new Error('docker save gave no manifest.json');
  const config = saved.get(entry.Config);
  if (!config) throw new Error(`no ${entry.Config} in the saved image`);
  const blobs = new Map<string, Buffer>([[sha256(config), config]]);
  const layers = entry.Layers.map((path) => {
    const tar = saved.get(path);
    if (!tar) throw new Error(`no ${path} in the saved image`);
    const gz = gzipSync(tar);
    blobs.set(sha256(gz), gz);
    return { mediaType: 'application/vnd.docker.image.rootfs.diff.tar.gzip', size: gz.length, digest: sha256(gz) };
  });
  const manifest = Buffer.from(JSON.stringify({
    schemaVersion: 2,
    mediaType: 'application/vnd.docker.distribution.manifest.v2+json',
    config: { mediaType: 'application/vnd.docker.container.image.v1+json', size: config.length, digest: sha256(config) },
    layers,
  }));
  const manifestDigest = sha256(manifest);
  const expected = `Basic ${Buffer.from(`${USER}:${PASSWORD}`).toString('base64')}`;
  const requests: string[] = [];

  const send = (res: ServerResponse, req: IncomingMessage, status: number, body: Buffer, headers: Record<string, string>) => {
    res.writeHead(status, { 'Docker-Distribution-API-Version': 'registry/2.0', 'Content-Length': String(body.length), ...headers });
    res.end(req.method === 'HEAD' ? undefined : body);
  };
  const server: Server = createServer((req, res) => {
    const path = new URL(req.url ?? '/', 'http://registry').pathname;
    const authorized = req.headers.authorization === expected;
    requests.push(`${req.method} ${path} ${req.headers.authorization ? (authorized ? 'ok' : 'wrong') : 'anonymous'}`);
    if (!authorized) {
      const body = Buffer.from(JSON.stringify({ errors: [{ code: 'UNAUTHORIZED', message: 'authentication required', detail: null }] }));
      return send(res, req, 401, body, { 'Content-Type': 'application/json', 'WWW-Authenticate': 'Basic realm="nodelet-test-registry"' });
    }
    if (path === '/v2/' || path === '/v2') return send(res, req, 200, Buffer.from('{}'), { 'Content-Type': 'application/json' });
    const m = /^\/v2\/(.+)\/(manifests|blobs)\/([^/]+)$/.exec(path);
    if (m?.[2] === 'manifests') {
      return send(res, req, 200, manifest, { 'Content-Type': 'application/vnd.docker.distribution.manifest.v2+json', 'Docker-Content-Digest': manifestDigest });
    }
    const blob = m?.[2] === 'blobs' ? blobs.get(m[3] ?? '') : undefined;
    if (blob) return send(res, req, 200, blob, { 'Content-Type': 'application/octet-stream', 'Docker-Content-Digest': m?.[3] ?? '' });
    const body = Buffer.from(JSON.stringify({ errors: [{ code: 'BLOB_UNKNOWN', message: 'blob unknown to registry' }] }));
    return send(res, req, 404, body, { 'Content-Type': 'application/json' });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    host: `127.0.0.1:${port}`,
    requests,
    close: () => new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    }),
  };
}

const registry = await startRegistry(BUSYBOX);
t.teardown(() => registry.close());
const tag = randomBytes(4).toString('hex');
/** A fresh name per case, so each pull really goes to the registry. */
const imageName = (what: string) => `${registry.host}/nodelet-test/${what}:${tag}`;
const pulled: string[] = [];
t.teardown(async () => {
  for (const name of pulled) await docker.getImage(name).remove({ force: true }).catch(() => undefined);
});

const absent = async (name: string) => {
  pulled.push(name);
  await docker.getImage(name).remove({ force: true }).catch(() => undefined);
  return name;
};

const nodeName = `pullsecrets-${tag}`;
const runtime = new DockerRuntime({ docker, nodeName, infraImage: 'registry.k8s.io/pause:3.10', podNetwork: 'none', log });

const errorOf = async (p: Promise<unknown>): Promise<Error> => {
  try {
    await p;
  } catch (err) {
    return err as Error;
  }
  throw new Error('the pull succeeded');
};

t.test('the runtime: an anonymous pull and a wrong password are refused as unauthorized; the right one pulls', async (t) => {
  const anon = await absent(imageName('anon'));
  const e1 = await errorOf(runtime.pullImage(anon, []));
  // Docker's words for a Basic challenge answered with no credentials at all.
  t.match(e1.message, /no basic auth credentials/i);
  t.ok(registry.requests.some((r) => r.endsWith('anonymous')), 'the registry was asked, anonymously');
  t.notOk(registry.requests.some((r) => r.endsWith(' ok')), 'and never with the right credentials');

  const wrong = await absent(imageName('wrong'));
  const e2 = await errorOf(runtime.pullImage(wrong, [{ username: USER, password: 'not-it' }]));
  t.match(e2.message, /unauthorized/i);
  t.ok(registry.requests.some((r) => r.endsWith('wrong')), 'the wrong credentials were sent');

  const right = await absent(imageName('right'));
  const info = await runtime.pullImage(right, [{ username: USER, password: PASSWORD }]);
  t.match(info.id, /^sha256:/);
  t.ok(info.sizeBytes > 0, 'with its size');
  t.equal(info.id, (await docker.getImage(BUSYBOX).inspect()).Id, 'the image served is the saved one');
});

t.test('the runtime: several credentials are tried in order until one pull succeeds; all failing lists each failure', async (t) => {
  const name = await absent(imageName('several'));
  const before = registry.requests.length;
  const asked: string[] = [];
  const creds = async () => {
    asked.push('asked');
    return [{ username: 'someone', password: 'else' }, { username: USER, password: PASSWORD }];
  };
  const events: string[] = [];
  const event = (_type: string, reason: string, message: string) => void events.push(`${reason}: ${message}`);
  await ensureImageExists(runtime, name, 'Always', { credentials: creds, event });
  const seen = registry.requests.slice(before);
  t.ok(seen.findIndex((r) => r.endsWith('wrong')) < seen.findIndex((r) => r.endsWith(' ok')), 'the first credential before the second');
  t.same(asked, ['asked']);
  t.match(events, [`Pulling: Pulling image "${name}"`, new RegExp(`^Pulled: Successfully pulled image "${name}" in \\S+ \\(\\S+ including waiting\\)\\. Image size: [1-9]\\d* bytes\\.$`)], 'the kubelet\'s events');

  // Present now: IfNotPresent does not pull, so the credentials are not even asked for.
  await ensureImageExists(runtime, name, 'IfNotPresent', { credentials: creds, event });
  t.same(asked, ['asked'], 'no pull, no credentials read');
  t.equal(events.at(-1), `Pulled: Container image "${name}" already present on machine`);

  const failing = await absent(imageName('all-wrong'));
  const e = await errorOf(runtime.pullImage(failing, [{ username: 'a', password: 'b' }, { username: 'c', password: 'd' }]));
  t.match(e.message, /^\[.*unauthorized.*, .*unauthorized.*\]$/is, 'one failure per credential');
});

const dockerConfigSecret = (name: string, password: string): Secret => ({
  metadata: { name, namespace: 'team' },
  type: 'kubernetes.io/dockerconfigjson',
  data: { '.dockerconfigjson': Buffer.from(JSON.stringify({ auths: { [`http://${registry.host}`]: { auth: Buffer.from(`${USER}:${password}`).toString('base64') } } })).toString('base64') },
});

t.test('through the kubelet: pull secrets from the object source; the right one runs the pod, a wrong one waits unauthorized', async (t) => {
  const secrets = [dockerConfigSecret('regcred', PASSWORD), dockerConfigSecret('stale', 'old-password')];
  const objects: PodObjectSource = {
    getSecret: async (namespace, name) => secrets.find((s) => s.metadata?.namespace === namespace && s.metadata?.name === name),
    getConfigMap: async () => undefined,
    requestServiceAccountToken: async () => {
      throw new Error('not used');
    },
  };
  const podManager = new PodManager();
  const statusManager = new StatusManager();
  const recorder = new EventRecorder({ nodeName });
  const kubelet = new Kubelet({
    nodeName,
    nodeIP: '127.0.0.1',
    runtime,
    podManager,
    statusManager,
    recorder,
    log,
    objects,
    syncFrequencyMs: 60_000,
    relistPeriodMs: 1000,
    backoff: new Backoff({ initialMs: 200, maxMs: 400 }),
  });
  t.teardown(async () => {
    await kubelet.stop();
    await removeNodeContainers(docker, nodeName);
  });
  kubelet.start();
  kubelet.markSourcesReady();
  const podOf = (uid: string, image: string, secret: string): Pod => ({
    metadata: { uid, name: uid, namespace: 'team' },
    spec: {
      restartPolicy: 'Always',
      terminationGracePeriodSeconds: 0,
      imagePullSecrets: [{ name: 'missing' }, { name: secret }],
      containers: [{ name: 'app', image, imagePullPolicy: 'Always', command: ['sh', '-c', 'echo pulled-and-running; sleep 600'] }],
    },
  });
  const add = (pod: Pod) => {
    podManager.updatePod(pod);
    kubelet.handlePodChanges({ added: [pod], updated: [], removed: [] });
  };

  const good = podOf('good', await absent(imageName('kubelet-good')), 'regcred');
  add(good);
  await waitFor('the pod with the right secret running', () => (statusManager.getPodStatus('good')?.containerStatuses?.[0]?.state?.running ? true : undefined), 90_000, 50);
  const events = recorder.list('team');
  t.ok(events.some((e) => e.reason === 'FailedToRetrieveImagePullSecret' && e.involvedObject?.name === 'good' && /\(missing\)/.test(e.message ?? '')), 'the missing secret is named in a warning, the pull goes on');
  t.ok(events.some((e) => e.reason === 'Pulled' && e.involvedObject?.name === 'good'));

  const bad = podOf('bad', await absent(imageName('kubelet-bad')), 'stale');
  add(bad);
  await waitFor('the failed pull event', () => (recorder.list('team').some((e) => e.involvedObject?.name === 'bad' && e.reason === 'Failed' && /unauthorized/i.test(e.message ?? '')) ? true : undefined), 60_000, 50);
  // Published at once (one more sync after a failure that left no container), not at the retry 10 s later.
  const waiting = await waitFor('the pod with the stale secret waiting', () => {
    const w = statusManager.getPodStatus('bad')?.containerStatuses?.[0]?.state?.waiting;
    return w?.reason === 'ErrImagePull' || w?.reason === 'ImagePullBackOff' ? w : undefined;
  }, 5_000, 50);
  t.match(waiting.message, /unauthorized/i, `${waiting.reason}: ${waiting.message}`);
  t.equal(statusManager.getPodStatus('bad')?.phase, 'Pending');
});

t.test('KubeletEnsureSecretPulledImages through the kubelet: a present image pulled with a secret is reused only with that secret or its credentials', async (t) => {
  const dockerConfigOf = (name: string, password: string, uid: string): Secret => ({ ...dockerConfigSecret(name, password), metadata: { name, namespace: 'team', uid } });
  const secrets = [dockerConfigOf('regcred', PASSWORD, 'uid-regcred'), dockerConfigOf('copy', PASSWORD, 'uid-copy'), dockerConfigOf('stale', 'old-password', 'uid-stale')];
  const objects: PodObjectSource = {
    getSecret: async (namespace, name) => secrets.find((s) => s.metadata?.namespace === namespace && s.metadata?.name === name),
    getConfigMap: async () => undefined,
    requestServiceAccountToken: async () => {
      throw new Error('not used');
    },
  };
  const rootDir = t.testdir();
  const imagePullManager = await ImagePullManager.open({ rootDir, enforcer: verificationEnforcer('NeverVerifyPreloadedImages'), log }, () => runtime.listImages());
  const podManager = new PodManager();
  const statusManager = new StatusManager();
  const recorder = new EventRecorder({ nodeName });
  const kubelet = new Kubelet({
    nodeName, nodeIP: '127.0.0.1', runtime, podManager, statusManager, recorder, log, objects, imagePullManager,
    syncFrequencyMs: 60_000, relistPeriodMs: 1000, backoff: new Backoff({ initialMs: 200, maxMs: 400 }),
  });
  t.teardown(async () => {
    await kubelet.stop();
    await removeNodeContainers(docker, nodeName);
  });
  kubelet.start();
  kubelet.markSourcesReady();
  const image = await absent(imageName('ensure-secret-pulled'));
  const add = (uid: string, pullSecrets: string[]) => {
    const pod: Pod = {
      metadata: { uid, name: uid, namespace: 'team' },
      spec: {
        restartPolicy: 'Always',
        terminationGracePeriodSeconds: 0,
        imagePullSecrets: pullSecrets.map((name) => ({ name })),
        containers: [{ name: 'app', image, imagePullPolicy: 'IfNotPresent', command: ['sh', '-c', 'sleep 600'] }],
      },
    };
    podManager.updatePod(pod);
    kubelet.handlePodChanges({ added: [pod], updated: [], removed: [] });
  };
  const running = (uid: string) => waitFor(`${uid} running`, () => (statusManager.getPodStatus(uid)?.containerStatuses?.[0]?.state?.running ? true : undefined), 90_000, 50);
  const pullsOk = () => registry.requests.filter((r) => r.includes('/manifests/') && r.endsWith(' ok')).length;

  add('owner', ['regcred']);
  await running('owner');
  const afterOwner = pullsOk();
  t.ok(afterOwner > 0, 'the owner pulled with its secret');
  const recorded = imagePullManager.record((await docker.getImage(image).inspect()).Id);
  t.same(recorded?.credentialMapping[`${registry.host}/nodelet-test/ensure-secret-pulled`]?.kubernetesSecrets?.map((s) => s.name), ['regcred'], 'the pulled record names the secret');

  add('borrower', []);
  const waiting = await waitFor('the pod without a secret refused', () => {
    const w = statusManager.getPodStatus('borrower')?.containerStatuses?.[0]?.state?.waiting;
    return w?.reason === 'ErrImagePull' || w?.reason === 'ImagePullBackOff' ? w : undefined;
  }, 60_000, 50);
  t.match(waiting.message, /no basic auth credentials|unauthorized/i, 'it had to pull with its own (no) credentials, and the registry refused');
  t.notOk(statusManager.getPodStatus('borrower')?.containerStatuses?.[0]?.state?.running, 'the image on the node was not handed to it');

  add('sibling', ['copy']);
  await running('sibling');
  t.equal(pullsOk(), afterOwner, 'another secret with the same credentials: no pull');
  t.ok(recorder.list('team').some((e) => e.involvedObject?.name === 'sibling' && e.reason === 'Pulled' && /already present on machine and can be accessed by the pod/.test(e.message ?? '')), 'the kubelet\'s event');

  add('rotated-out', ['stale']);
  await waitFor('the pod with other credentials refused', () => (recorder.list('team').some((e) => e.involvedObject?.name === 'rotated-out' && e.reason === 'Failed' && /unauthorized/i.test(e.message ?? '')) ? true : undefined), 60_000, 50);
});
