import t from 'tap';
import type { Pod } from 'kubernetes-types/core/v1.js';
import { formatMap, goQuote, podFieldValue, readsPodIP, resourceFieldValue, type PodRuntimeInfo } from '../../../src/volumes/downward-api.js';

const info: PodRuntimeInfo = { hostIPs: ['10.0.0.1', 'fd00::1'], podIPs: ['172.17.0.2', 'fd00::2'], allocatable: { cpuMilli: 4000n, memoryBytes: 8n << 30n, ephemeralStorageBytes: 100n << 30n } };
const pod: Pod = {
  metadata: { name: 'web', namespace: 'prod', uid: 'u-1', labels: { app: 'web', 'tier': 'front "end"' }, annotations: { 'example.com/b': 'x\ny', a: 'é\t' } },
  spec: {
    nodeName: 'node-1',
    serviceAccountName: 'builder',
    containers: [
      { name: 'main', image: 'i', resources: { limits: { cpu: '250m', memory: '64Mi' }, requests: { cpu: '100m' } } },
      { name: 'bare', image: 'i' },
    ],
  },
};
const field = (fieldPath: string) => podFieldValue(pod, { fieldPath }, info);

t.test('formatMap and goQuote match the kubelet', async (t) => {
  t.equal(formatMap({ b: '2', a: '1' }), 'a="1"\nb="2"', 'sorted, no trailing newline');
  t.equal(formatMap(undefined), '');
  t.equal(goQuote('a"b\\c'), '"a\\"b\\\\c"');
  t.equal(goQuote('\n\t\r\x07\b\f\v'), '"\\n\\t\\r\\a\\b\\f\\v"');
  t.equal(goQuote('\x00\x1b\x7f'), '"\\x00\\x1b\\x7f"');
  t.equal(goQuote('héllo 世界 🙂'), '"héllo 世界 🙂"', 'printable unicode stays');
  t.equal(goQuote('\u00ad\u2028'), '"\\u00ad\\u2028"', 'non-printable unicode is escaped');
  t.equal(goQuote('\u{e0001}'), '"\\U000e0001"');
});

t.test('field paths', async (t) => {
  t.equal(field('metadata.name'), 'web');
  t.equal(field('metadata.namespace'), 'prod');
  t.equal(field('metadata.uid'), 'u-1');
  t.equal(field('metadata.labels'), 'app="web"\ntier="front \\"end\\""');
  t.equal(field('metadata.annotations'), 'a="é\\t"\nexample.com/b="x\\ny"');
  t.equal(field("metadata.labels['app']"), 'web');
  t.equal(field("metadata.annotations['example.com/b']"), 'x\ny', 'a subscripted value is raw');
  t.equal(field("metadata.labels['missing']"), '');
  t.equal(field('spec.nodeName'), 'node-1');
  t.equal(field('spec.serviceAccountName'), 'builder');
  t.equal(field('status.hostIP'), '10.0.0.1');
  t.equal(field('status.hostIPs'), '10.0.0.1,fd00::1');
  t.equal(field('status.podIP'), '172.17.0.2');
  t.equal(field('status.podIPs'), '172.17.0.2,fd00::2');
  t.throws(() => field('spec.restartPolicy'), { message: 'unsupported fieldPath: spec.restartPolicy' });
  t.throws(() => field("metadata.name['x']"), { message: 'fieldPath "metadata.name[\'x\']" does not support subscript' });
  t.throws(() => field("metadata.labels['bad key!']"), /invalid key subscript/);
  t.throws(() => podFieldValue(pod, { apiVersion: 'v2', fieldPath: 'metadata.name' }, info), { message: 'unsupported pod version: v2' });
});

t.test('resource fields', async (t) => {
  const main = pod.spec!.containers[0];
  const res = (resource: string, divisor?: string, containerName?: string) =>
    resourceFieldValue(pod, main, { resource, ...(divisor ? { divisor } : {}), ...(containerName ? { containerName } : {}) }, info);
  t.equal(res('limits.cpu'), '1', '250m rounds up to 1 core');
  t.equal(res('limits.cpu', '1m'), '250');
  t.equal(res('requests.cpu', '1m'), '100');
  t.equal(res('limits.memory'), String(64 * 1024 * 1024));
  t.equal(res('limits.memory', '1Mi'), '64');
  t.equal(res('limits.memory', '1M'), '68', '67.1 MB rounds up');
  t.equal(res('requests.memory', '1Mi'), '64', 'an unset request reports the limit');
  t.equal(res('limits.cpu', '1m', 'bare'), '4000', 'an unset limit reports node allocatable');
  t.equal(res('limits.memory', '1Gi', 'bare'), '8');
  t.equal(res('limits.ephemeral-storage', '1Gi', 'bare'), '100');
  t.equal(res('requests.cpu', '1m', 'bare'), '0', 'an unset request without a limit is 0');
  t.throws(() => res('limits.gpu'), { message: 'unsupported container resource : limits.gpu' });
  t.throws(() => res('limits.cpu', undefined, 'nope'), { message: 'cannot find container: nope' });
});

t.test('readsPodIP finds env and volume references', async (t) => {
  t.notOk(readsPodIP(pod));
  t.ok(readsPodIP({ spec: { containers: [{ name: 'a', env: [{ name: 'IP', valueFrom: { fieldRef: { fieldPath: 'status.podIP' } } }] }] } }));
  t.ok(readsPodIP({ spec: { containers: [], volumes: [{ name: 'v', projected: { sources: [{ downwardAPI: { items: [{ path: 'ips', fieldRef: { fieldPath: 'status.podIPs' } }] } }] } }] } }));
});
