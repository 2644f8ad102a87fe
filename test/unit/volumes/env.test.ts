import t from 'tap';
import type { ConfigMap, Container, EnvVar, Pod, Secret } from 'kubernetes-types/core/v1.js';
import { envList, expandCommandAndArgs, resolveEnv } from '../../../src/volumes/env.js';
import { MAX_CONTAINER_EXPANSION_BYTES, MAX_EXPANDED_VALUE_BYTES } from '../../../src/volumes/expansion.js';
import type { PodObjectSource } from '../../../src/volumes/source.js';
import type { PodRuntimeInfo } from '../../../src/volumes/downward-api.js';

const info: PodRuntimeInfo = { hostIPs: ['10.0.0.1'], podIPs: ['172.17.0.2'], allocatable: { cpuMilli: 2000n, memoryBytes: 1n << 30n, ephemeralStorageBytes: 0n } };
const b64 = (s: string) => Buffer.from(s).toString('base64');

/** An in-memory apiserver: objects by `namespace/name`, counting reads. */
function memorySource(objs: { configMaps?: Record<string, ConfigMap>; secrets?: Record<string, Secret> }): PodObjectSource & { reads: string[] } {
  const reads: string[] = [];
  return {
    reads,
    async getConfigMap(ns, name) {
      reads.push(`cm ${ns}/${name}`);
      return objs.configMaps?.[`${ns}/${name}`];
    },
    async getSecret(ns, name) {
      reads.push(`secret ${ns}/${name}`);
      if (name === 'broken') throw new Error('connection refused');
      return objs.secrets?.[`${ns}/${name}`];
    },
    async requestServiceAccountToken() {
      throw new Error('not used');
    },
  };
}

const objects = memorySource({
  configMaps: { 'ns/cfg': { data: { MODE: 'fast', 'bad=key': 'x', '1ok': 'digit first is fine (relaxed)', LEVEL: '3' } } },
  secrets: { 'ns/creds': { data: { PASSWORD: b64('s3cret'), USER: b64('admin') } } },
});
const pod = (container: Container): Pod => ({ metadata: { name: 'p', namespace: 'ns', uid: 'u', labels: { app: 'x' } }, spec: { nodeName: 'n1', containers: [container] } });
/** `src` null: standalone (no apiserver). */
const env = async (container: Container, src: PodObjectSource | null = objects, events: string[] = []) =>
  Object.fromEntries(await resolveEnv(pod(container), container, { info, objects: src ?? undefined, onInvalidKeys: (m) => events.push(m) }));

t.test('plain values expand references to variables defined before them', async (t) => {
  const got = await env({
    name: 'c',
    env: [
      { name: 'A', value: 'a' },
      { name: 'B', value: '$(A)-$(C)-$$(A)' },
      { name: 'C', value: 'c' },
      { name: 'EMPTY' },
    ],
  });
  t.same(got, { A: 'a', B: 'a-$(C)-$(A)', C: 'c', EMPTY: '' });
});

t.test('downward API fields and resources', async (t) => {
  const got = await env({
    name: 'c',
    resources: { limits: { memory: '256Mi' } },
    env: [
      { name: 'NAME', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } },
      { name: 'APP', valueFrom: { fieldRef: { fieldPath: "metadata.labels['app']" } } },
      { name: 'IP', valueFrom: { fieldRef: { fieldPath: 'status.podIP' } } },
      { name: 'HOST', valueFrom: { fieldRef: { fieldPath: 'status.hostIPs' } } },
      { name: 'NODE', valueFrom: { fieldRef: { fieldPath: 'spec.nodeName' } } },
      { name: 'MEM', valueFrom: { resourceFieldRef: { resource: 'limits.memory', divisor: '1Mi' } } },
      { name: 'CPU', valueFrom: { resourceFieldRef: { resource: 'limits.cpu' } } },
      { name: 'REF', value: '$(NAME)@$(IP)' },
    ],
  });
  t.same(got, { NAME: 'p', APP: 'x', IP: '172.17.0.2', HOST: '10.0.0.1', NODE: 'n1', MEM: '256', CPU: '2', REF: 'p@172.17.0.2' });
  await t.rejects(env({ name: 'c', env: [{ name: 'X', valueFrom: { fieldRef: { fieldPath: 'spec.nope' } } }] }), { reason: 'CreateContainerConfigError', message: 'unsupported fieldPath: spec.nope' });
});

t.test('configMap and secret keys, optional or not', async (t) => {
  const got = await env({
    name: 'c',
    env: [
      { name: 'MODE', valueFrom: { configMapKeyRef: { name: 'cfg', key: 'MODE' } } },
      { name: 'PASS', valueFrom: { secretKeyRef: { name: 'creds', key: 'PASSWORD' } } },
      { name: 'GONE', valueFrom: { configMapKeyRef: { name: 'cfg', key: 'nope', optional: true } } },
      { name: 'GONE2', valueFrom: { secretKeyRef: { name: 'missing', key: 'k', optional: true } } },
    ],
  });
  t.same(got, { MODE: 'fast', PASS: 's3cret' }, 'optional misses leave the variable unset');
  await t.rejects(env({ name: 'c', env: [{ name: 'X', valueFrom: { secretKeyRef: { name: 'missing', key: 'k' } } }] }), { message: 'secret "missing" not found' });
  await t.rejects(env({ name: 'c', env: [{ name: 'X', valueFrom: { configMapKeyRef: { name: 'missing', key: 'k' } } }] }), { message: 'configmap "missing" not found' });
  await t.rejects(env({ name: 'c', env: [{ name: 'X', valueFrom: { configMapKeyRef: { name: 'cfg', key: 'k' } } }] }), { message: "couldn't find key k in ConfigMap ns/cfg" });
  await t.rejects(env({ name: 'c', env: [{ name: 'X', valueFrom: { secretKeyRef: { name: 'creds', key: 'k' } } }] }), { message: "couldn't find key k in Secret ns/creds" });
  await t.rejects(env({ name: 'c', env: [{ name: 'X', valueFrom: { secretKeyRef: { name: 'broken', key: 'k' } } }] }), { message: "couldn't get secret ns/broken: connection refused" });
});

t.test('envFrom: prefixes, invalid names skipped with one event per source, env wins', async (t) => {
  const events: string[] = [];
  const got = await env(
    {
      name: 'c',
      envFrom: [{ configMapRef: { name: 'cfg' } }, { secretRef: { name: 'creds' }, prefix: 'DB_' }, { secretRef: { name: 'missing', optional: true } }],
      env: [{ name: 'LEVEL', value: 'override-$(MODE)' }],
    },
    objects,
    events,
  );
  t.same(got, { MODE: 'fast', '1ok': 'digit first is fine (relaxed)', LEVEL: 'override-fast', DB_PASSWORD: 's3cret', DB_USER: 'admin' });
  t.same(events, ['Keys [bad=key] from the EnvFrom configMap ns/cfg were skipped since they are considered invalid environment variable names.']);
  await t.rejects(env({ name: 'c', envFrom: [{ configMapRef: { name: 'missing' } }] }), { message: 'configmap "missing" not found' });
  await t.rejects(env({ name: 'c', envFrom: [{ secretRef: { name: 'missing' } }] }), { message: 'secret "missing" not found' });
});

t.test('each object is read once per container', async (t) => {
  const src = memorySource({ configMaps: { 'ns/cfg': { data: { A: '1', B: '2' } } } });
  await env({ name: 'c', envFrom: [{ configMapRef: { name: 'cfg' } }], env: [{ name: 'X', valueFrom: { configMapKeyRef: { name: 'cfg', key: 'A' } } }, { name: 'Y', valueFrom: { configMapKeyRef: { name: 'cfg', key: 'B' } } }] }, src);
  t.same(src.reads, ['cm ns/cfg']);
});

t.test('standalone: any configMap or secret reference needs cluster mode', async (t) => {
  await t.rejects(env({ name: 'c', env: [{ name: 'X', valueFrom: { secretKeyRef: { name: 'creds', key: 'k', optional: true } } }] }, null), {
    reason: 'CreateContainerConfigError',
    message: 'secret "creds" needs cluster mode (--kubeconfig)',
  });
  await t.rejects(env({ name: 'c', envFrom: [{ configMapRef: { name: 'cfg' } }] }, null), { message: 'configmap "cfg" needs cluster mode (--kubeconfig)' });
  t.same(await env({ name: 'c', env: [{ name: 'A', value: '1' }] }, null), { A: '1' }, 'plain values need nothing');
});

t.test('command and args expand against the final environment', async (t) => {
  const e = new Map([['GREETING', 'hi'], ['WHO', 'you']]);
  t.same(expandCommandAndArgs({ name: 'c', command: ['sh', '-c', 'echo $(GREETING) $$(WHO) $(NOPE)'], args: ['$(WHO)'] }, e), {
    command: ['sh', '-c', 'echo hi $(WHO) $(NOPE)'],
    args: ['you'],
  });
  t.same(expandCommandAndArgs({ name: 'c' }, e), {}, 'absent command and args stay absent (the image decides)');
  t.same(envList(e), ['GREETING=hi', 'WHO=you']);
});

t.test('a $(VAR) doubling bomb is refused at the first value past 128 KiB, naming it', async (t) => {
  const bomb: Container = { name: 'c', env: [{ name: 'V0', value: 'x'.repeat(32) }] };
  for (let i = 1; i < 22; i++) bomb.env!.push({ name: `V${i}`, value: `$(V${i - 1})$(V${i - 1})` });
  await t.rejects(env(bomb), {
    reason: 'CreateContainerConfigError',
    message: `env V13: $(VAR) expansion would exceed ${MAX_EXPANDED_VALUE_BYTES} bytes (MAX_ARG_STRLEN, the kernel's limit on one argument or env string)`,
  });
});

t.test('all values of a container share one cap, references to objects included', async (t) => {
  const big = 'b'.repeat(100 * 1024);
  const src = memorySource({ configMaps: { 'ns/big': { data: { V: big } } } });
  // 30 entries of 100 KiB (each under the per-value cap) pass 2 MiB at the 21st.
  const many = (ref: (i: number) => Omit<EnvVar, 'name'>): Container => ({ name: 'c', env: Array.from({ length: 30 }, (_, i) => ({ name: `E${i}`, ...ref(i) })) });
  await t.rejects(env(many(() => ({ valueFrom: { configMapKeyRef: { name: 'big', key: 'V' } } })), src), {
    reason: 'CreateContainerConfigError',
    message: `env E20: value would exceed ${MAX_CONTAINER_EXPANSION_BYTES} bytes (the container's env, command, args and subpaths together)`,
  });
  const first: EnvVar = { name: 'B', valueFrom: { configMapKeyRef: { name: 'big', key: 'V' } } };
  await t.rejects(env({ name: 'c', env: [first, ...Array.from({ length: 30 }, (_, i) => ({ name: `E${i}`, value: '$(B)' }))] }, src), { message: /^env E19: .* 2097152 bytes \(the container's/ });
  t.equal(Object.keys(await env(many((i) => (i < 20 ? { valueFrom: { configMapKeyRef: { name: 'big', key: 'V' } } } : { value: 'small' })), src)).length, 30, 'under the share: all kept');
});

t.test('command and args: each element within 128 KiB, all within what the env left', async (t) => {
  const vars = new Map([['K', 'k'.repeat(100 * 1024)]]);
  t.throws(() => expandCommandAndArgs({ name: 'c', args: ['$(K)$(K)'] }, vars), { reason: 'CreateContainerConfigError', message: /^args\[0\]: \$\(VAR\) expansion would exceed 131072 bytes/ });
  t.throws(() => expandCommandAndArgs({ name: 'c', command: Array.from({ length: 30 }, () => '$(K)') }, vars), { message: /^command\[20\]: .* 2097152 bytes/ });
  t.same(expandCommandAndArgs({ name: 'c', command: ['echo', '$(K)'] }, vars).command?.[1]?.length, 100 * 1024);
});
