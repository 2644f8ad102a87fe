import t from 'tap';
import type { Secret } from 'kubernetes-types/core/v1.js';
import type { Pod } from '../../../src/api/types.js';
import { pullCredentials } from '../../../src/kubelet/pull-secrets.js';
import { hashAuthConfig } from '../../../src/kubelet/keyring.js';
import type { ImageInfo, RegistryAuth } from '../../../src/runtime/types.js';
import type { PodObjectSource } from '../../../src/volumes/source.js';
import { waitFor } from '../../helpers/wait.js';
import { startKubelet } from './fixtures/kubelet.js';
import { MemoryRuntime } from './fixtures/memory-runtime.js';

const b64 = (s: string) => Buffer.from(s).toString('base64');
const dockerConfigSecret = (name: string, auths: Record<string, unknown>): Secret => ({
  metadata: { name, namespace: 'team' },
  type: 'kubernetes.io/dockerconfigjson',
  data: { '.dockerconfigjson': b64(JSON.stringify({ auths })) },
});

/** Secrets of namespace `team`; a name in `failing` rejects as an unreachable apiserver would. */
function objects(secrets: Secret[], failing: string[] = []): PodObjectSource & { reads: string[] } {
  const reads: string[] = [];
  return {
    reads,
    async getSecret(namespace: string, name: string) {
      reads.push(`${namespace}/${name}`);
      if (failing.includes(name)) throw new Error('connect ECONNREFUSED');
      return secrets.find((s) => s.metadata?.name === name && namespace === 'team');
    },
    async getConfigMap() {
      return undefined;
    },
    async requestServiceAccountToken() {
      throw new Error('not here');
    },
  };
}

const podWith = (secrets: string[], image = 'registry.example:5000/app:1', policy = 'Always'): Pod => ({
  metadata: { uid: 'u1', name: 'p', namespace: 'team' },
  spec: { restartPolicy: 'Always', imagePullSecrets: secrets.map((name) => ({ name })), containers: [{ name: 'app', image, imagePullPolicy: policy }] },
});

/** A credential without its tracking (source secret, hash). */
const plain = (c: RegistryAuth): RegistryAuth => ({ username: c.username, password: c.password, ...(c.email ? { email: c.email } : {}) });

function warnings() {
  const list: string[] = [];
  return { list, warn: (reason: string, message: string) => list.push(`${reason}: ${message}`) };
}

t.test('the credentials of the pull secrets that match the image, most specific first, secret order kept', async (t) => {
  const src = objects([
    dockerConfigSecret('host', { 'https://registry.example:5000': { auth: b64('host-user:p1') } }),
    dockerConfigSecret('team', { 'registry.example:5000/app': { username: 'app-user', password: 'p2' } }),
    dockerConfigSecret('elsewhere', { 'other.example': { username: 'other', password: 'p3' } }),
  ]);
  const w = warnings();
  const creds = await pullCredentials(podWith(['host', 'team', 'elsewhere']), 'registry.example:5000/app:1', { objects: src, warn: w.warn });
  t.same(creds.map(plain), [
    { username: 'app-user', password: 'p2' },
    { username: 'host-user', password: 'p1' },
  ]);
  t.same(creds.map((c) => c.source?.name), ['team', 'host'], 'each tracked to its secret');
  t.same(creds.map((c) => c.authHash), [hashAuthConfig({ username: 'app-user', password: 'p2' }), hashAuthConfig({ username: 'host-user', password: 'p1' })]);
  t.same(src.reads, ['team/host', 'team/team', 'team/elsewhere']);
  t.same(w.list, []);
});

t.test('a secret that cannot be read is skipped with the kubelet event; the pull goes on with the rest', async (t) => {
  const src = objects([dockerConfigSecret('ok', { 'registry.example:5000': { username: 'u', password: 'p' } })], ['down']);
  const w = warnings();
  const creds = await pullCredentials(podWith(['missing', 'ok', 'down', '']), 'registry.example:5000/app', { objects: src, warn: w.warn });
  t.same(creds.map(plain), [{ username: 'u', password: 'p' }]);
  t.same(w.list, ['FailedToRetrieveImagePullSecret: Unable to retrieve some image pull secrets (missing, down); attempting to pull the image may not succeed.']);
  t.notOk(src.reads.includes('team/'), 'an entry with an empty name is not read');
});

t.test('standalone: no secret can be read; anonymous pull, with the event saying why', async (t) => {
  const w = warnings();
  t.same(await pullCredentials(podWith(['regcred']), 'registry.example:5000/app', { objects: undefined, warn: w.warn }), []);
  t.match(w.list, [/^FailedToRetrieveImagePullSecret: Unable to retrieve some image pull secrets \(regcred\); .* need cluster mode \(--kubeconfig\)\.$/]);
  const none = warnings();
  t.same(await pullCredentials(podWith([]), 'registry.example:5000/app', { objects: undefined, warn: none.warn }), []);
  t.same(none.list, [], 'no pull secrets: nothing to say');
});

t.test('a malformed docker config fails the pull, naming the secret', async (t) => {
  const broken: Secret = { metadata: { name: 'broken', namespace: 'team' }, type: 'kubernetes.io/dockerconfigjson', data: { '.dockerconfigjson': b64('{"auths":') } };
  await t.rejects(pullCredentials(podWith(['broken']), 'registry.example:5000/app', { objects: objects([broken]), warn: () => undefined }), /image pull secret "broken": invalid \.dockerconfigjson/);
});

/** A runtime that has no image until told so, and records the credentials each pull was handed. */
class PullingRuntime extends MemoryRuntime {
  readonly pulls: { image: string; credentials: readonly RegistryAuth[] }[] = [];
  present = false;

  override async imageStatus(image: string): Promise<ImageInfo | undefined> {
    return this.present ? { id: `sha256:${image}`, user: '', sizeBytes: 1 } : undefined;
  }

  override async pullImage(image: string, credentials: readonly RegistryAuth[]): Promise<ImageInfo> {
    this.pulls.push({ image, credentials });
    return { id: `sha256:${image}`, user: '', sizeBytes: 1 };
  }
}

function setup(source: PodObjectSource | undefined) {
  return startKubelet({ runtime: new PullingRuntime(), ...(source ? { objects: source } : {}) });
}

t.test('through the sync: the pod pull secrets reach the runtime pull; read only when a pull is needed', async (t) => {
  const src = objects([dockerConfigSecret('regcred', { 'registry.example:5000': { username: 'u', password: 'p' } })]);
  const { runtime, statusManager, kubelet, add } = setup(src);
  t.teardown(() => kubelet.stop());
  add(podWith(['regcred']));
  await waitFor('Running', () => (statusManager.getPodStatus('u1')?.phase === 'Running' ? true : undefined), 5000, 5);
  t.same(runtime.pulls.map((p) => ({ ...p, credentials: p.credentials.map(plain) })), [{ image: 'registry.example:5000/app:1', credentials: [{ username: 'u', password: 'p' }] }]);

  const second = setup(objects([]));
  t.teardown(() => second.kubelet.stop());
  second.runtime.present = true;
  second.add(podWith(['regcred'], 'registry.example:5000/app:1', 'IfNotPresent'));
  await waitFor('Running', () => (second.statusManager.getPodStatus('u1')?.phase === 'Running' ? true : undefined), 5000, 5);
  t.same(second.runtime.pulls, [], 'a present image: no pull, so no secret read');
});

t.test('through the sync, standalone: anonymous pull and a FailedToRetrieveImagePullSecret event on the pod', async (t) => {
  const { runtime, statusManager, recorder, kubelet, add } = setup(undefined);
  t.teardown(() => kubelet.stop());
  add(podWith(['regcred']));
  await waitFor('Running', () => (statusManager.getPodStatus('u1')?.phase === 'Running' ? true : undefined), 5000, 5);
  t.same(runtime.pulls[0]?.credentials, []);
  const event = recorder.list('team').find((e) => e.reason === 'FailedToRetrieveImagePullSecret');
  t.equal(event?.type, 'Warning');
  t.equal(event?.involvedObject?.name, 'p');
  t.match(event?.message, /\(regcred\)/);
});
