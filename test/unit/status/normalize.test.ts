import t from 'tap';
import type { ContainerStatus, PodStatus } from '../../../src/api/types.js';
import { MAX_POD_TERMINATION_MESSAGE_LENGTH, isStatusEqual, jsonEqual, normalizeStatus } from '../../../src/status/normalize.js';
import { rfc3339 } from '../../../src/api/time.js';
import { STATUS_MESSAGE_LIMIT } from '../../../src/api/truncate.js';
import { illegalContainerTransition, isTerminalPhase } from '../../../src/status/transitions.js';

const cs = (name: string, message = ''): ContainerStatus => ({
  name,
  image: 'i',
  imageID: '',
  ready: false,
  restartCount: 0,
  state: { terminated: { exitCode: 1, message, startedAt: '2026-01-01T00:00:00.123Z', finishedAt: '2026-01-01T00:00:01.999Z' } },
  lastState: { terminated: { exitCode: 2, message } },
});

t.test('rfc3339 drops sub-seconds and leaves non-dates alone', async (t) => {
  t.equal(rfc3339(new Date('2026-01-01T00:00:00.999Z')), '2026-01-01T00:00:00Z');
  t.equal(rfc3339('2026-01-01T01:00:00+01:00'), '2026-01-01T00:00:00Z');
  t.equal(rfc3339('garbage'), 'garbage');
});

t.test('normalizeStatus: timestamps, order, message budget', async (t) => {
  const long = 'x'.repeat(MAX_POD_TERMINATION_MESSAGE_LENGTH);
  const out = normalizeStatus({
    initContainerStatuses: [cs('z-init'), cs('a-init')],
    containerStatuses: [cs('b', long), cs('a', 'short')],
  });
  t.same(out.initContainerStatuses?.map((c) => c.name), ['z-init', 'a-init'], 'init containers keep their order');
  t.same(out.containerStatuses?.map((c) => c.name), ['a', 'b']);
  const b = out.containerStatuses?.[1];
  t.equal(b?.state?.terminated?.startedAt, '2026-01-01T00:00:00Z');
  t.equal(b?.state?.terminated?.finishedAt, '2026-01-01T00:00:01Z');
  t.equal(b?.state?.terminated?.message?.length, MAX_POD_TERMINATION_MESSAGE_LENGTH / 4, 'budget shared by 4 containers');
  t.equal(b?.lastState?.terminated?.message?.length, MAX_POD_TERMINATION_MESSAGE_LENGTH / 4);
  t.equal(out.containerStatuses?.[0]?.state?.terminated?.message, 'short');
});

t.test('isStatusEqual ignores container order and probe times, not content', async (t) => {
  const a: PodStatus = { phase: 'Running', containerStatuses: [cs('a'), cs('b')], conditions: [{ type: 'Ready', status: 'True', lastProbeTime: '1' }] };
  t.ok(isStatusEqual(a, { ...a, containerStatuses: [cs('b'), cs('a')], conditions: [{ type: 'Ready', status: 'True', lastProbeTime: '2' }] }));
  t.notOk(isStatusEqual(a, { ...a, conditions: [{ type: 'Ready', status: 'False' }] }));
  t.notOk(isStatusEqual(a, { ...a, containerStatuses: [cs('a')] }));
  t.notOk(isStatusEqual(a, { ...a, phase: 'Failed' }));
});

t.test('jsonEqual treats undefined like absent', async (t) => {
  t.ok(jsonEqual({ a: 1, b: undefined }, { a: 1 }));
  t.notOk(jsonEqual({ a: [1, 2] }, { a: [2, 1] }));
  t.notOk(jsonEqual({ a: null }, { a: {} }));
  t.notOk(jsonEqual([], {}));
});

t.test('illegalContainerTransition and isTerminalPhase', async (t) => {
  const done: PodStatus = { containerStatuses: [cs('c')] };
  const back: PodStatus = { containerStatuses: [{ ...cs('c'), state: { running: {} } }] };
  t.equal(illegalContainerTransition(done, back, { restartPolicy: 'Never', containers: [] }), 'c');
  t.equal(illegalContainerTransition(done, back, { restartPolicy: 'OnFailure', containers: [] }), undefined, 'exit 1 restarts under OnFailure');
  t.equal(illegalContainerTransition(done, back, { containers: [] }), undefined, 'Always is the default');
  t.equal(illegalContainerTransition(done, { containerStatuses: [] }, { restartPolicy: 'Never', containers: [] }), undefined, 'a vanished status is not a transition');
  const init: PodStatus = { initContainerStatuses: [cs('i')] };
  const initBack: PodStatus = { initContainerStatuses: [{ ...cs('i'), state: { waiting: {} } }] };
  t.equal(illegalContainerTransition(init, initBack, { restartPolicy: 'Never', containers: [], initContainers: [{ name: 'i' }] }), 'i');
  t.equal(illegalContainerTransition(init, initBack, { restartPolicy: 'Never', containers: [], initContainers: [{ name: 'i', restartPolicy: 'Always' }] }), undefined, 'sidecars restart');
  t.ok(isTerminalPhase('Succeeded') && isTerminalPhase('Failed'));
  t.notOk(isTerminalPhase('Running') || isTerminalPhase(undefined));
});

t.test('normalizeStatus cuts every message to 4 KiB without copying it whole', async (t) => {
  const huge = 'm'.repeat(32 * 1024 * 1024);
  const status: PodStatus = {
    message: huge,
    conditions: [{ type: 'Ready', status: 'False', message: huge }],
    containerStatuses: [{ ...cs('a'), state: { waiting: { reason: 'CreateContainerConfigError', message: huge } } }],
  };
  const started = performance.now();
  const out = normalizeStatus(status);
  t.ok(performance.now() - started < 500, `took ${Math.round(performance.now() - started)} ms`);
  t.equal(Buffer.byteLength(out.message ?? ''), STATUS_MESSAGE_LIMIT);
  t.equal(Buffer.byteLength(out.conditions?.[0]?.message ?? ''), STATUS_MESSAGE_LIMIT);
  t.equal(Buffer.byteLength(out.containerStatuses?.[0]?.state?.waiting?.message ?? ''), STATUS_MESSAGE_LIMIT);
  t.equal(status.message, huge, 'the input is not modified');
  t.equal(normalizeStatus({ message: 'fine' }).message, 'fine');
});
