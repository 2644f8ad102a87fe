import t from 'tap';
import type { ContainerStatus, Pod, PodSpec, PodStatus } from '../../../src/api/types.js';
import { humanDuration, podColumnDefinitions, podRowCells, podsToTable, summarizePod } from '../../../src/server/table.js';
import { makePod } from './fixtures/fake-host.js';

const created = '2026-01-01T00:00:00Z';
const at = (ms: number) => new Date(Date.parse(created) + ms);

function withStatuses(statuses: ContainerStatus[], extra: Partial<PodStatus> = {}, spec?: PodSpec): Pod {
  return {
    ...makePod({ name: 'p' }),
    spec: spec ?? { containers: statuses.map((s) => ({ name: s.name })) },
    status: { phase: 'Running', containerStatuses: statuses, ...extra },
  };
}
const cs = (name: string, state: ContainerStatus['state'], ready = false, restartCount = 0): ContainerStatus => ({
  name,
  image: 'x',
  imageID: '',
  ready,
  restartCount,
  state,
});

t.test('humanDuration mirrors apimachinery HumanDuration', async (t) => {
  const s = 1000;
  const m = 60 * s;
  const h = 60 * m;
  const d = 24 * h;
  const cases: Array<[number, string]> = [
    [-5 * s, '<invalid>'],
    [-1 * s, '0s'],
    [0, '0s'],
    [5 * s, '5s'],
    [119 * s, '119s'],
    [2 * m, '2m'],
    [2 * m + 30 * s, '2m30s'],
    [5 * m, '5m'],
    [12 * m + 5 * s, '12m'],
    [179 * m, '179m'],
    [2 * h, '120m'],
    [3 * h, '3h'],
    [5 * h + 3 * m, '5h3m'],
    [20 * h, '20h'],
    [3 * d + 4 * h, '3d4h'],
    [4 * d, '4d'],
    [12 * d, '12d'],
    [800 * d, '2y70d'],
    [9 * 365 * d, '9y'],
  ];
  for (const [ms, want] of cases) t.equal(humanDuration(ms), want, `${ms}ms`);
});

t.test('row cells for a running pod', async (t) => {
  const pod = makePod({ name: 'web-node1', created });
  t.same(podRowCells(pod, at(5 * 60_000)), ['web-node1', '1/1', 'Running', 0, '5m', '<none>', 'node1']);
  const withIP = makePod({ name: 'db', created, podIP: '10.1.2.3', restarts: 4 });
  t.same(podRowCells(withIP, at(3_000)), ['db', '1/1', 'Running', 4, '3s', '10.1.2.3', 'node1']);
});

t.test('AGE falls back to startTime, then <unknown>', async (t) => {
  const base = makePod({ name: 'p' });
  const pod: Pod = { ...base, metadata: { name: 'p', namespace: 'default' } };
  t.equal(podRowCells(pod, new Date())[4], '<unknown>');
  const started: Pod = { ...pod, status: { ...pod.status, startTime: created } };
  t.equal(podRowCells(started, at(4 * 3_600_000))[4], '4h');
});

t.test('STATUS follows kubectl printPod', async (t) => {
  const cases: Array<[string, Pod, string]> = [
    ['running', withStatuses([cs('a', { running: {} }, true)]), 'Running'],
    ['waiting reason wins', withStatuses([cs('a', { waiting: { reason: 'CrashLoopBackOff' } }, false, 5)]), 'CrashLoopBackOff'],
    ['terminated reason', withStatuses([cs('a', { terminated: { exitCode: 0, reason: 'Completed' } })], { phase: 'Succeeded' }), 'Completed'],
    ['terminated error', withStatuses([cs('a', { terminated: { exitCode: 1, reason: 'Error' } })], { phase: 'Failed' }), 'Error'],
    ['exit code without reason', withStatuses([cs('a', { terminated: { exitCode: 3 } })]), 'ExitCode:3'],
    ['signal without reason', withStatuses([cs('a', { terminated: { exitCode: 137, signal: 9 } })]), 'Signal:9'],
    ['pod reason over phase', withStatuses([], { phase: 'Failed', reason: 'Evicted' }), 'Evicted'],
    ['pending phase', withStatuses([], { phase: 'Pending' }), 'Pending'],
    [
      'completed sidecar-style container with another running → NotReady',
      withStatuses([cs('a', { running: {} }, true), cs('b', { terminated: { exitCode: 0, reason: 'Completed' } })]),
      'NotReady',
    ],
  ];
  for (const [name, pod, want] of cases) t.equal(summarizePod(pod).reason, want, name);
});

t.test('init containers: Init:N/M, Init:<reason>, restarts of the init container', async (t) => {
  const spec: PodSpec = { initContainers: [{ name: 'init1' }, { name: 'init2' }], containers: [{ name: 'a' }] };
  const main = [cs('a', { waiting: { reason: 'PodInitializing' } })];
  const initPod = (init: ContainerStatus[]) => withStatuses(main, { phase: 'Pending', initContainerStatuses: init }, spec);
  t.equal(summarizePod(initPod([cs('init1', { terminated: { exitCode: 0 } }), cs('init2', { running: {} })])).reason, 'Init:1/2');
  t.same(summarizePod(initPod([cs('init1', { waiting: { reason: 'CrashLoopBackOff' } }, false, 3)])), {
    reason: 'Init:CrashLoopBackOff',
    ready: 0,
    total: 1,
    restarts: 3,
  });
  t.equal(summarizePod(initPod([cs('init1', { terminated: { exitCode: 2 } })])).reason, 'Init:ExitCode:2');
  t.equal(summarizePod(initPod([cs('init1', { terminated: { exitCode: 1, reason: 'Error' } })])).reason, 'Init:Error');
});

t.test('READY counts ready running containers, RESTARTS sums them', async (t) => {
  const pod = withStatuses([cs('a', { running: {} }, true, 2), cs('b', { running: {} }, false, 3), cs('c', { running: {} }, true, 0)]);
  t.same(summarizePod(pod), { reason: 'Running', ready: 2, total: 3, restarts: 5 });
});

t.test('Terminating while deleting a non-terminal pod', async (t) => {
  const base = makePod({ name: 'p' });
  const deleting: Pod = { ...base, metadata: { ...base.metadata, deletionTimestamp: created } };
  t.equal(summarizePod(deleting).reason, 'Terminating');
  t.equal(summarizePod({ ...deleting, status: { phase: 'Succeeded', containerStatuses: [] } }).reason, 'Succeeded');
});

t.test('podsToTable: columns, rows and PartialObjectMetadata', async (t) => {
  const pod = makePod({ name: 'web-node1', created, labels: { app: 'web' } });
  const table = podsToTable([pod], at(5 * 60_000));
  t.equal(table.kind, 'Table');
  t.equal(table.apiVersion, 'meta.k8s.io/v1');
  t.same(table.metadata, { resourceVersion: '' });
  t.same(
    table.columnDefinitions.map((c) => [c.name, c.type, c.format, c.priority]),
    [
      ['Name', 'string', 'name', 0],
      ['Ready', 'string', '', 0],
      ['Status', 'string', '', 0],
      ['Restarts', 'integer', '', 0],
      ['Age', 'string', '', 0],
      ['IP', 'string', '', 1],
      ['Node', 'string', '', 1],
    ],
  );
  t.equal(table.rows.length, 1);
  t.same(table.rows[0]?.cells, ['web-node1', '1/1', 'Running', 0, '5m', '<none>', 'node1']);
  t.same(table.rows[0]?.object, { kind: 'PartialObjectMetadata', apiVersion: 'meta.k8s.io/v1', metadata: pod.metadata });
  t.equal(podsToTable([], new Date(), 'v1beta1').apiVersion, 'meta.k8s.io/v1beta1');
  // The exported definitions are not handed out by reference.
  table.columnDefinitions[0]!.name = 'changed';
  t.equal(podColumnDefinitions[0]?.name, 'Name');
});
