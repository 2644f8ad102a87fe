import t from 'tap';
import { pino } from 'pino';
import type { Pod } from '../../../src/api/types.js';
import { aggregate, validatePod } from '../../../src/api/validation.js';
import { filterInvalidPods } from '../../../src/pod/invalid.js';
import { EventRecorder } from '../../../src/events/recorder.js';
import type { Logger } from '../../../src/logging/index.js';

const subdomainMsg =
  "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
const labelMsg =
  "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";

function good(name = 'web', uid = `uid-${name}`): Pod {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: 'default', uid },
    spec: { containers: [{ name: 'app', image: 'nginx' }] },
  };
}

/** A good pod with `edit` applied to a copy. */
function withEdit(edit: (p: Pod & { spec: NonNullable<Pod['spec']> }) => void): Pod {
  const p = structuredClone(good()) as Pod & { spec: NonNullable<Pod['spec']> };
  edit(p);
  return p;
}

function capture(): { log: Logger; lines: Array<Record<string, unknown>> } {
  const lines: Array<Record<string, unknown>> = [];
  const log = pino({ level: 'info' }, { write: (s: string) => void lines.push(JSON.parse(s) as Record<string, unknown>) });
  return { log, lines };
}

t.test('a good pod has no errors', async (t) => {
  t.same(validatePod(good()), []);
});

t.test('metadata', async (t) => {
  t.same(validatePod({ ...good(), metadata: { name: 'Foo', namespace: 'default' } }), [`metadata.name: Invalid value: "Foo": ${subdomainMsg}`]);
  t.same(validatePod({ ...good(), metadata: { namespace: 'default' } }), ['metadata.name: Required value: name or generateName is required']);
  t.same(validatePod({ ...good(), metadata: { name: 'a', namespace: 'My_NS' } }), [`metadata.namespace: Invalid value: "My_NS": ${labelMsg}`]);
  t.same(validatePod({ ...good(), metadata: { name: 'a', namespace: 'a.b' } }), ['metadata.namespace: Invalid value: "a.b": must not contain dots']);
  t.same(validatePod({ ...good(), metadata: { name: 'a' } }), ['metadata.namespace: Required value']);
  t.same(validatePod({ ...good(), metadata: { name: 'a'.repeat(254), namespace: 'default' } }), [
    `metadata.name: Invalid value: "${'a'.repeat(254)}": must be no more than 253 characters`,
  ]);
});

t.test('containers', async (t) => {
  t.same(validatePod(withEdit((p) => (p.spec.containers = []))), ['spec.containers: Required value']);
  t.same(validatePod({ ...good(), spec: undefined }), ['spec.containers: Required value']);
  t.same(
    validatePod(withEdit((p) => p.spec.containers.push({ name: 'app', image: 'x' }))),
    ['spec.containers[1].name: Duplicate value: "app"'],
  );
  t.same(
    validatePod(withEdit((p) => (p.spec.initContainers = [{ name: 'app', image: 'x' }]))),
    ['spec.containers[0].name: Duplicate value: "app"'],
    'init and regular container names share one namespace',
  );
  t.same(validatePod(withEdit((p) => (p.spec.containers[0]!.image = ''))), ['spec.containers[0].image: Required value']);
  t.same(validatePod(withEdit((p) => (p.spec.containers[0]!.image = ' nginx'))), [
    'spec.containers[0].image: Invalid value: " nginx": must not have leading or trailing whitespace',
  ]);
  t.same(validatePod(withEdit((p) => (p.spec.containers[0]!.name = ''))), ['spec.containers[0].name: Required value']);
  t.same(validatePod(withEdit((p) => (p.spec.containers[0]!.name = 'App'))), [`spec.containers[0].name: Invalid value: "App": ${labelMsg}`]);
  t.same(validatePod(withEdit((p) => (p.spec.containers[0]!.imagePullPolicy = 'Sometimes'))), [
    'spec.containers[0].imagePullPolicy: Unsupported value: "Sometimes": supported values: "Always", "IfNotPresent", "Never"',
  ]);
});

t.test('pod spec enums and numbers', async (t) => {
  t.same(validatePod(withEdit((p) => (p.spec.restartPolicy = 'Sometimes'))), [
    'spec.restartPolicy: Unsupported value: "Sometimes": supported values: "Always", "OnFailure", "Never"',
  ]);
  t.same(validatePod(withEdit((p) => (p.spec.dnsPolicy = 'Google'))), [
    'spec.dnsPolicy: Unsupported value: "Google": supported values: "ClusterFirst", "ClusterFirstWithHostNet", "Default", "None"',
  ]);
  t.same(validatePod(withEdit((p) => (p.spec.terminationGracePeriodSeconds = -1))), [
    'spec.terminationGracePeriodSeconds: Invalid value: -1: must be greater than or equal to 0',
  ]);
  t.same(validatePod(withEdit((p) => (p.spec.terminationGracePeriodSeconds = 0))), []);
  t.same(validatePod(withEdit((p) => (p.spec.activeDeadlineSeconds = 0))), [
    'spec.activeDeadlineSeconds: Invalid value: 0: must be between 1 and 2147483647, inclusive',
  ]);
});

t.test('ports', async (t) => {
  const ports = (list: unknown[]) => validatePod(withEdit((p) => (p.spec.containers[0]!.ports = list as never)));
  t.same(ports([{ containerPort: 80 }, { containerPort: 65535, protocol: 'SCTP' }, { containerPort: 1, hostPort: 8080, protocol: 'UDP' }]), []);
  t.same(ports([{ containerPort: 70000 }]), ['spec.containers[0].ports[0].containerPort: Invalid value: 70000: must be between 1 and 65535, inclusive']);
  t.same(ports([{ containerPort: -1 }]), ['spec.containers[0].ports[0].containerPort: Invalid value: -1: must be between 1 and 65535, inclusive']);
  t.same(ports([{}]), ['spec.containers[0].ports[0].containerPort: Required value']);
  t.same(ports([{ containerPort: 80, hostPort: 65536 }]), ['spec.containers[0].ports[0].hostPort: Invalid value: 65536: must be between 1 and 65535, inclusive']);
  t.same(ports([{ containerPort: 80, protocol: 'ICMP' }]), [
    'spec.containers[0].ports[0].protocol: Unsupported value: "ICMP": supported values: "SCTP", "TCP", "UDP"',
  ]);
});

t.test('env and volumes', async (t) => {
  t.same(validatePod(withEdit((p) => (p.spec.containers[0]!.env = [{ name: '' }]))), ['spec.containers[0].env[0].name: Required value']);
  t.same(validatePod(withEdit((p) => (p.spec.containers[0]!.env = [{ name: 'A=B' }]))), [
    `spec.containers[0].env[0].name: Invalid value: "A=B": a valid environment variable name must consist only of printable ASCII characters other than '='`,
  ]);
  t.same(validatePod(withEdit((p) => (p.spec.containers[0]!.env = [{ name: 'my.var-1', value: 'x' }]))), []);
  t.same(
    validatePod(
      withEdit((p) => {
        p.spec.volumes = [{ name: 'data' }, { name: 'data' }];
        p.spec.containers[0]!.volumeMounts = [{ name: 'data', mountPath: '/d' }, { name: 'logs', mountPath: '' }];
      }),
    ),
    ['spec.volumes[1].name: Duplicate value: "data"', 'spec.containers[0].volumeMounts[1].name: Not found: "logs"', 'spec.containers[0].volumeMounts[1].mountPath: Required value'],
  );
});

t.test('mistyped input is reported, not thrown on', async (t) => {
  t.same(validatePod('x' as unknown as Pod), ['Invalid value: "x": must be an object']);
  t.same(validatePod({ ...good(), spec: 'x' } as unknown as Pod), ['spec: Invalid value: "x": must be an object']);
  t.same(validatePod({ ...good(), spec: { containers: 'x' } } as unknown as Pod), ['spec.containers: Invalid value: "x": must be a list']);
  t.same(validatePod({ ...good(), metadata: { name: 5, namespace: 'default' } } as unknown as Pod), ['metadata.name: Invalid value: 5: must be a string']);
  t.same(validatePod({ ...good(), metadata: { name: 'a', namespace: 'default', labels: { a: 1 } } } as unknown as Pod), [
    'metadata.labels: Invalid value: {"a":1}: must be a map of string keys to string values',
  ]);
  t.same(validatePod(withEdit((p) => (p.spec.containers = [null as never]))), ['spec.containers[0]: Invalid value: null: must be an object']);
});

t.test('aggregate mirrors Go', async (t) => {
  t.equal(aggregate(['a']), 'a');
  t.equal(aggregate(['a', 'b']), '[a, b]');
});

t.test('filterInvalidPods skips bad and duplicate pods, one event each', async (t) => {
  const recorder = new EventRecorder({ nodeName: 'n1' });
  const { log, lines } = capture();
  const bad = withEdit((p) => {
    p.metadata = { name: 'bad', namespace: 'default', uid: 'uid-bad' };
    p.spec.restartPolicy = 'Sometimes';
  });
  const dupInBatch = good('web', 'uid-web-2');
  const dupOfOther = good('db');
  const noUID = good('nouid', '');
  const pods = [good('web'), bad, dupInBatch, good('cache'), dupOfOther, noUID];
  const out = filterInvalidPods(pods, 'file', recorder, log, new Set(['db_default']));
  t.same(out.map((p) => p.metadata?.uid), ['uid-web', 'uid-cache'], 'good pods kept in order');

  const events = recorder.list(undefined);
  t.equal(events.length, 4, 'one event per rejected pod');
  for (const e of events) t.match(e, { type: 'Warning', reason: 'FailedValidation' });
  t.same(
    events.map((e) => e.message),
    [
      'Error validating pod bad.default from file, ignoring: spec.restartPolicy: Unsupported value: "Sometimes": supported values: "Always", "OnFailure", "Never"',
      'Error validating pod web.default from file, ignoring: metadata.name: Duplicate value: "web"',
      'Error validating pod db.default from file, ignoring: metadata.name: Duplicate value: "db"',
      'Error validating pod nouid.default from file, ignoring: metadata.uid: Required value',
    ],
  );
  t.equal(events[1]?.involvedObject.uid, 'uid-web-2');

  const warns = lines.filter((l) => l.level === 40);
  t.equal(warns.length, 4);
  t.equal(
    warns[0]?.msg,
    'Pod[2] (bad.default) from file failed validation, ignoring: spec.restartPolicy: Unsupported value: "Sometimes": supported values: "Always", "OnFailure", "Never"',
  );
  t.equal(warns[0]?.pod, 'default/bad');
  t.equal(warns[1]?.msg, 'Pod[3] (web.default) from file failed validation, ignoring: metadata.name: Duplicate value: "web"');
});

t.test('filterInvalidPods: several errors aggregate, garbage identity is placeholdered', async (t) => {
  const recorder = new EventRecorder({ nodeName: 'n1' });
  const { log, lines } = capture();
  const pod = { metadata: { name: 7 }, spec: { containers: [] } } as unknown as Pod;
  t.same(filterInvalidPods([pod], 'http', recorder, log), []);
  const msg = recorder.list(undefined)[0]?.message ?? '';
  t.equal(
    msg,
    'Error validating pod <empty-name>.<empty-namespace> from http, ignoring: [metadata.name: Invalid value: 7: must be a string, metadata.namespace: Required value, spec.containers: Required value]',
  );
  t.match(lines[0]?.msg, /^Pod\[1\] \(<empty-name>\.<empty-namespace>\) from http failed validation, ignoring: \[/);
});

t.test('labels and annotations: the apiserver limits (256 KiB of annotations, 63-character label names and values)', async (t) => {
  const meta = (m: Record<string, unknown>): Pod => ({ ...good(), metadata: { name: 'web', namespace: 'default', uid: 'u', ...m } });
  const kib = 'v'.repeat(1024);
  // 9,000 annotations of 1 KB: a 9 MiB manifest.
  const huge = Object.fromEntries(Array.from({ length: 9000 }, (_, i) => [`a${i}`, kib]));
  t.same(validatePod(meta({ annotations: huge })), ['metadata.annotations: Too long: must have at most 262144 bytes']);
  const atLimit = { a: 'b'.repeat(256 * 1024 - 1) };
  t.same(validatePod(meta({ annotations: atLimit })), [], 'keys plus values up to 262144 bytes are fine');
  t.same(validatePod(meta({ annotations: { a: 'b'.repeat(256 * 1024) } })), ['metadata.annotations: Too long: must have at most 262144 bytes']);
  t.same(validatePod(meta({ annotations: { a: 'é'.repeat(128 * 1024) } })), ['metadata.annotations: Too long: must have at most 262144 bytes'], 'counted in UTF-8 bytes');
  t.same(validatePod(meta({ annotations: { 'Example.COM/Some_Key': 'any value at all: spaces, !' } })), [], 'annotation keys are checked lower-cased; values are free');
  const qname =
    "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";
  t.same(validatePod(meta({ annotations: { 'bad key': 'x' } })), [`metadata.annotations: Invalid value: "bad key": ${qname}`]);

  t.same(validatePod(meta({ labels: { app: 'web', 'app.kubernetes.io/name': 'My_App-1', empty: '' } })), []);
  t.same(validatePod(meta({ labels: { ['k'.repeat(64)]: 'v' } })), [`metadata.labels: Invalid value: "${'k'.repeat(64)}": name part must be no more than 63 characters`]);
  const valueMsg =
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";
  t.same(validatePod(meta({ labels: { app: 'v'.repeat(64) } })), [`metadata.labels: Invalid value: "${'v'.repeat(64)}": must be no more than 63 characters`]);
  t.same(validatePod(meta({ labels: { app: 'has space' } })), [`metadata.labels: Invalid value: "has space": ${valueMsg}`]);
  t.same(validatePod(meta({ labels: { '/x': 'v', 'a/b/c': 'v' } })), [
    'metadata.labels: Invalid value: "/x": prefix part must be non-empty',
    `metadata.labels: Invalid value: "a/b/c": a qualified name ${qname.replace('name part ', '')} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')`,
  ]);
  const long = validatePod(meta({ labels: { app: 'x'.repeat(1 << 20) } }));
  t.ok(long.every((e) => e.length < 1024), 'a 1 MiB value is cut in the message');
});

t.test('dnsConfig: the apiserver\'s validatePodDNSConfig', async (t) => {
  const dns = (dnsPolicy: string | undefined, dnsConfig: unknown) => validatePod(withEdit((p) => {
    if (dnsPolicy !== undefined) p.spec.dnsPolicy = dnsPolicy;
    if (dnsConfig !== undefined) (p.spec as unknown as Record<string, unknown>).dnsConfig = dnsConfig;
  }));
  t.same(dns('None', { nameservers: ['1.2.3.4', '2001:db8::1'], searches: ['ns1.svc.cluster.local', 'my.dns.search.suffix.', '.', 'under_score.example'], options: [{ name: 'ndots', value: '2' }] }), []);
  t.same(dns('ClusterFirst', undefined), []);
  t.same(dns('None', undefined), ['spec.dnsConfig: Required value: must provide `dnsConfig` when `dnsPolicy` is None']);
  t.same(dns('None', { searches: ['a'] }), ['spec.dnsConfig.nameservers: Required value: must provide at least one DNS nameserver when `dnsPolicy` is None']);
  t.same(dns('Default', { nameservers: ['1.1.1.1', '1.1.1.2', '1.1.1.3', '1.1.1.4'] }), ['spec.dnsConfig.nameservers: Invalid value: ["1.1.1.1","1.1.1.2","1.1.1.3","1.1.1.4"]: must not have more than 3 nameservers']);
  t.same(dns('Default', { nameservers: ['dns.example'] }), ['spec.dnsConfig.nameservers[0]: Invalid value: "dns.example": must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)']);
  const many = Array.from({ length: 33 }, (_, i) => `s${i}.example`);
  t.match(dns('Default', { searches: many }), [/^spec\.dnsConfig\.searches: Invalid value: .*must not have more than 32 search paths$/]);
  const long = Array.from({ length: 12 }, (_, i) => `${'a'.repeat(60)}.${'b'.repeat(60)}.${'c'.repeat(60)}.d${i}`);
  t.match(dns('Default', { searches: long }), [/must not have more than 2048 characters \(including spaces\) in the search list$/]);
  t.same(dns('Default', { searches: ['Bad.Example'] }), [`spec.dnsConfig.searches[0]: Invalid value: "Bad.Example": ${subdomainMsg}`]);
  t.same(dns('Default', { options: [{ value: '1' }] }), ['spec.dnsConfig.options[0]: Required value: must not be empty']);
  t.same(dns('Default', 'x'), ['spec.dnsConfig: Invalid value: "x": must be an object']);
});

const spec = (edit: Record<string, unknown>) =>
  validatePod(withEdit((p) => Object.assign(p.spec as unknown as Record<string, unknown>, edit)));

t.test('hostAliases: ValidateHostAliases (IPs, DNS-1123 subdomain hostnames); newlines cannot reach /etc/hosts', async (t) => {
  t.same(spec({ hostAliases: [{ ip: '10.1.2.3', hostnames: ['foo.local', 'bar'] }, { ip: 'fd00::1', hostnames: ['six'] }] }), []);
  t.same(spec({ hostAliases: [{ ip: '10.1.2.3\n6.6.6.6 evil', hostnames: ['foo'] }] }), ['spec.hostAliases[0].ip: Invalid value: "10.1.2.3\\n6.6.6.6 evil": must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)']);
  t.same(spec({ hostAliases: [{ hostnames: ['foo'] }] }), ['spec.hostAliases[0].ip: Invalid value: "": must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)']);
  t.same(spec({ hostAliases: [{ ip: '10.1.2.3', hostnames: ['foo\n1.2.3.4\tkubernetes.default'] }] }), [`spec.hostAliases[0].hostnames[0]: Invalid value: "foo\\n1.2.3.4\\tkubernetes.default": ${subdomainMsg}`]);
  t.same(spec({ hostAliases: [{ ip: '10.1.2.3', hostnames: [7] }] }), ['spec.hostAliases[0].hostnames[0]: Invalid value: 7: must be a string']);
  t.same(spec({ hostAliases: 'x' }), ['spec.hostAliases: Invalid value: "x": must be a list']);
  t.same(spec({ hostAliases: ['x'] }), ['spec.hostAliases[0]: Invalid value: "x": must be an object']);
});

t.test('dnsConfig searches and options: no whitespace or control characters reach resolv.conf', async (t) => {
  t.same(spec({ dnsConfig: { searches: ['ok.example'], options: [{ name: 'ndots', value: '2' }, { name: 'edns0' }] } }), []);
  t.same(spec({ dnsConfig: { searches: ['a.example\nnameserver 6.6.6.6'] } }), [`spec.dnsConfig.searches[0]: Invalid value: "a.example\\nnameserver 6.6.6.6": ${subdomainMsg}`]);
  const word = 'must consist of printable ASCII characters other than whitespace';
  t.same(spec({ dnsConfig: { options: [{ name: 'ndots', value: '2\nnameserver 6.6.6.6' }] } }), [`spec.dnsConfig.options[0].value: Invalid value: "2\\nnameserver 6.6.6.6": ${word}`]);
  t.same(spec({ dnsConfig: { options: [{ name: 'a b' }] } }), [`spec.dnsConfig.options[0].name: Invalid value: "a b": ${word}`]);
  t.same(spec({ dnsConfig: { options: [{ name: 'ndots', value: 2 }] } }), ['spec.dnsConfig.options[0].value: Invalid value: 2: must be a string']);
});

t.test('hostname and subdomain are DNS-1123 labels (they are written into /etc/hosts)', async (t) => {
  t.same(spec({ hostname: 'web-1', subdomain: 'svc' }), []);
  t.same(spec({ hostname: 'web\n6.6.6.6 evil' }), [`spec.hostname: Invalid value: "web\\n6.6.6.6 evil": ${labelMsg}`]);
  t.same(spec({ subdomain: 'a.b' }), ['spec.subdomain: Invalid value: "a.b": must not contain dots']);
  t.same(spec({ hostname: 5 }), ['spec.hostname: Invalid value: 5: must be a string']);
});

t.test('volume file modes: 0 to 0777 for every defaultMode and item mode (fileModeErrorMsg)', async (t) => {
  const msg = 'must be a number between 0 and 0777 (octal), both inclusive';
  const vols = (volumes: unknown[]) => spec({ volumes });
  t.same(vols([{ name: 'd', downwardAPI: { defaultMode: 0o644, items: [{ path: 'x', mode: 0o755, fieldRef: { fieldPath: 'metadata.name' } }] } }]), []);
  t.same(vols([{ name: 'd', downwardAPI: { items: [{ path: 'x', mode: 0o4755, fieldRef: { fieldPath: 'metadata.name' } }] } }]), [`spec.volumes[0].downwardAPI.items[0].mode: Invalid value: 2541: ${msg}`]);
  t.same(vols([{ name: 'd', downwardAPI: { defaultMode: 0o1777 } }]), [`spec.volumes[0].downwardAPI.defaultMode: Invalid value: 1023: ${msg}`]);
  t.same(vols([{ name: 's', secret: { secretName: 'x', defaultMode: -1, items: [{ key: 'k', path: 'k', mode: 0o2755 }] } }]), [
    `spec.volumes[0].secret.defaultMode: Invalid value: -1: ${msg}`,
    `spec.volumes[0].secret.items[0].mode: Invalid value: 1517: ${msg}`,
  ]);
  t.same(vols([{ name: 'c', configMap: { name: 'x', defaultMode: 0o4000, items: [{ key: 'k', path: 'k', mode: 1.5 }] } }]), [
    `spec.volumes[0].configMap.defaultMode: Invalid value: 2048: ${msg}`,
    `spec.volumes[0].configMap.items[0].mode: Invalid value: 1.5: ${msg}`,
  ]);
  t.same(
    vols([{ name: 'p', projected: { defaultMode: 0o7777, sources: [{ secret: { name: 's', items: [{ key: 'k', path: 'a', mode: 0o4755 }] } }, { configMap: { name: 'c', items: [{ key: 'k', path: 'b', mode: 0o4755 }] } }, { downwardAPI: { items: [{ path: 'c', mode: 0o4755, fieldRef: { fieldPath: 'metadata.name' } }] } }] } }]),
    [
      `spec.volumes[0].projected.defaultMode: Invalid value: 4095: ${msg}`,
      `spec.volumes[0].projected.sources[0].secret.items[0].mode: Invalid value: 2541: ${msg}`,
      `spec.volumes[0].projected.sources[1].configMap.items[0].mode: Invalid value: 2541: ${msg}`,
      `spec.volumes[0].projected.sources[2].downwardAPI.items[0].mode: Invalid value: 2541: ${msg}`,
    ],
  );
  t.same(vols([{ name: 'd', downwardAPI: { items: ['x'] } }]), ['spec.volumes[0].downwardAPI.items[0]: Invalid value: "x": must be an object']);
  t.same(vols([{ name: 'd', secret: 'x' }]), ['spec.volumes[0].secret: Invalid value: "x": must be an object']);
});

t.test('metadata fields a typed decode would refuse: wrong JSON types, timestamps that are not RFC 3339', async (t) => {
  const meta = (edit: Record<string, unknown>) => validatePod(withEdit((p) => Object.assign(p.metadata as Record<string, unknown>, edit)));
  t.same(meta({ creationTimestamp: '2026-01-02T03:04:05Z', deletionTimestamp: null, generation: 2, finalizers: ['a'], ownerReferences: [{ kind: 'Node' }] }), []);
  t.same(meta({ creationTimestamp: 5 }), ['metadata.creationTimestamp: Invalid value: 5: must be a string']);
  t.same(meta({ creationTimestamp: 'yesterday' }), ['metadata.creationTimestamp: Invalid value: "yesterday": must be an RFC 3339 time (e.g. 2006-01-02T15:04:05Z)']);
  t.same(meta({ deletionGracePeriodSeconds: 'x', resourceVersion: 1 }), ['metadata.resourceVersion: Invalid value: 1: must be a string', 'metadata.deletionGracePeriodSeconds: Invalid value: "x": must be an integer']);
  t.same(meta({ finalizers: [1], ownerReferences: 'x' }), ['metadata.finalizers[0]: Invalid value: 1: must be a string', 'metadata.ownerReferences: Invalid value: "x": must be a list']);
});

t.test('filterInvalidPods: a UID that could not name a directory is refused', async (t) => {
  const { log } = capture();
  const recorder = new EventRecorder({ nodeName: 'n1' });
  const kept = filterInvalidPods([good('a', '../../etc'), good('b', 'ok-uid')], 'file', recorder, log);
  t.same(kept.map((p) => p.metadata?.uid), ['ok-uid']);
  t.match(recorder.list(undefined)[0]?.message, /metadata\.uid: Invalid value: "\.\.\/\.\.\/etc": must be a UID/);
});

t.test('volume item paths and subPath descend (validateLocalDescendingPath, validateLocalNonReservedPath)', async (t) => {
  const vols = (volumes: unknown[], mounts: unknown[] = []) =>
    validatePod(withEdit((p) => {
      (p.spec as unknown as Record<string, unknown>).volumes = volumes;
      (p.spec.containers[0] as unknown as Record<string, unknown>).volumeMounts = mounts;
    }));
  t.same(vols([{ name: 'd', downwardAPI: { items: [{ path: 'a/b', fieldRef: { fieldPath: 'metadata.name' } }] } }], [{ name: 'd', mountPath: '/d', subPath: 'a' }]), []);
  t.same(vols([{ name: 'd', downwardAPI: { items: [{ path: '../../etc/cron.d/x', fieldRef: { fieldPath: 'metadata.name' } }] } }]), [
    `spec.volumes[0].downwardAPI.items[0].path: Invalid value: "../../etc/cron.d/x": must not contain '..'`,
    `spec.volumes[0].downwardAPI.items[0].path: Invalid value: "../../etc/cron.d/x": must not start with '..'`,
  ]);
  t.same(vols([{ name: 's', secret: { secretName: 's', items: [{ key: 'k', path: '/etc/x' }, { key: 'k', path: '..data' }, { key: 'k' }] } }]), [
    'spec.volumes[0].secret.items[0].path: Invalid value: "/etc/x": must be a relative path',
    `spec.volumes[0].secret.items[1].path: Invalid value: "..data": must not start with '..'`,
    'spec.volumes[0].secret.items[2].path: Required value',
  ]);
  t.same(vols([{ name: 'd', emptyDir: {} }], [{ name: 'd', mountPath: '/d', subPath: 'a/../../x' }]), [`spec.containers[0].volumeMounts[0].subPath: Invalid value: "a/../../x": must not contain '..'`]);
});
