import t from 'tap';
import type { Pod, PodSpec } from '../../../src/api/types.js';
import { generatePodStatus, getPhase } from '../../../src/kubelet/pod-status.js';
import type { WaitingReason } from '../../../src/kubelet/container-statuses.js';
import type { RuntimeContainer, RuntimePod, RuntimeSandbox, RuntimeContainerState } from '../../../src/runtime/types.js';

const T0 = Date.parse('2026-01-01T00:00:00Z');
const at = (s: number) => new Date(T0 + s * 1000);
const iso = (s: number) => at(s).toISOString().replace(/\.\d+Z$/, 'Z');
const NOW = new Date(T0 + 3_600_000);
const NOW_ISO = '2026-01-01T01:00:00Z';

/** Instance `attempt` of container `name`: created at attempt*10 s, started 1 s later, exited 5 s later. */
function ctr(name: string, attempt: number, state: RuntimeContainerState, extra: Partial<RuntimeContainer> = {}): RuntimeContainer {
  return {
    id: `${name}-${attempt}`,
    name,
    attempt,
    restartCount: attempt,
    hash: 'h',
    image: 'busybox',
    imageID: 'sha256:abc',
    state,
    createdAt: at(attempt * 10),
    ...(state === 'running' || state === 'exited' ? { startedAt: at(attempt * 10 + 1) } : {}),
    ...(state === 'exited' ? { finishedAt: at(attempt * 10 + 5), exitCode: 0 } : {}),
    ...extra,
  };
}
const exited = (name: string, attempt: number, exitCode: number, extra: Partial<RuntimeContainer> = {}) => ctr(name, attempt, 'exited', { exitCode, ...extra });

const sandbox = (attempt = 0, ready = true, ips: string[] = ['10.0.0.5']): RuntimeSandbox => ({ id: `sb-${attempt}`, attempt, ready, createdAt: at(attempt), ips });
const rpod = (containers: RuntimeContainer[], sandboxes: RuntimeSandbox[] = [sandbox()]): RuntimePod => ({ uid: 'u1', name: 'p', namespace: 'default', sandboxes, containers });

function mkPod(names: string[], spec: Partial<PodSpec> = {}, status?: Pod['status']): Pod {
  return {
    metadata: { uid: 'u1', name: 'p', namespace: 'default' },
    spec: { restartPolicy: 'Always', containers: names.map((name) => ({ name, image: `img-${name}` })), ...spec },
    ...(status ? { status } : {}),
  };
}

const generate = (pod: Pod, runtime: RuntimePod | undefined, waiting?: Record<string, WaitingReason>) =>
  generatePodStatus(pod, runtime, { hostIP: '192.168.1.10', now: NOW, ...(waiting ? { waiting: new Map(Object.entries(waiting)) } : {}) });

t.test('container statuses', async (t) => {
  const cases: { name: string; policy?: string; runtime: RuntimePod | undefined; waiting?: Record<string, WaitingReason>; want: object; ready: boolean }[] = [
    {
      name: 'running',
      runtime: rpod([ctr('a', 0, 'running')]),
      want: { state: { running: { startedAt: iso(1) } }, lastState: {}, restartCount: 0, containerID: 'docker://a-0', imageID: 'docker://sha256:abc', image: 'img-a', started: true },
      ready: true,
    },
    {
      name: 'exited successfully',
      policy: 'Never',
      runtime: rpod([exited('a', 0, 0)]),
      want: { state: { terminated: { exitCode: 0, reason: 'Completed', startedAt: iso(1), finishedAt: iso(5), containerID: 'docker://a-0' } }, lastState: {}, started: false },
      ready: false,
    },
    {
      name: 'exited with the runtime\'s reason and message',
      policy: 'Never',
      runtime: rpod([exited('a', 0, 137, { reason: 'OOMKilled', message: 'oom' })]),
      want: { state: { terminated: { exitCode: 137, reason: 'OOMKilled', message: 'oom' } } },
      ready: false,
    },
    {
      name: 'exited with a failure and no reason',
      policy: 'Never',
      runtime: rpod([exited('a', 0, 3)]),
      want: { state: { terminated: { exitCode: 3, reason: 'Error' } } },
      ready: false,
    },
    {
      name: 'restarted: the previous instance is lastState (instances listed oldest first)',
      runtime: rpod([exited('a', 0, 1), ctr('a', 1, 'running')]),
      want: { state: { running: { startedAt: iso(11) } }, lastState: { terminated: { exitCode: 1, reason: 'Error', containerID: 'docker://a-0' } }, restartCount: 1, containerID: 'docker://a-1' },
      ready: true,
    },
    {
      name: 'back-off: waiting, with the exited instance as lastState',
      runtime: rpod([exited('a', 1, 2), exited('a', 0, 1)]),
      waiting: { a: { reason: 'CrashLoopBackOff', message: 'back-off 10s restarting failed container=a' } },
      want: {
        state: { waiting: { reason: 'CrashLoopBackOff', message: 'back-off 10s restarting failed container=a' } },
        lastState: { terminated: { exitCode: 2, containerID: 'docker://a-1', finishedAt: iso(15) } },
        restartCount: 1,
        containerID: 'docker://a-1',
      },
      ready: false,
    },
    {
      name: 'a back-off reason is ignored for a container that will not restart (Never)',
      policy: 'Never',
      runtime: rpod([exited('a', 0, 1)]),
      waiting: { a: { reason: 'CrashLoopBackOff' } },
      want: { state: { terminated: { exitCode: 1 } }, lastState: {} },
      ready: false,
    },
    {
      name: 'created, not started',
      runtime: rpod([ctr('a', 0, 'created')]),
      want: { state: { waiting: { reason: 'ContainerCreating' } }, containerID: 'docker://a-0', started: false },
      ready: false,
    },
    {
      name: 'no instance yet',
      runtime: rpod([]),
      want: { state: { waiting: { reason: 'ContainerCreating' } }, lastState: {}, restartCount: 0, imageID: '', image: 'img-a' },
      ready: false,
    },
    {
      name: 'no runtime pod, image pull failing',
      runtime: undefined,
      waiting: { a: { reason: 'ErrImagePull', message: 'manifest unknown' } },
      want: { state: { waiting: { reason: 'ErrImagePull', message: 'manifest unknown' } } },
      ready: false,
    },
    {
      name: 'a stale reason does not hide a running container',
      runtime: rpod([ctr('a', 0, 'running')]),
      waiting: { a: { reason: 'ImagePullBackOff' } },
      want: { state: { running: {} } },
      ready: true,
    },
    {
      name: 'unknown runtime state collapses to waiting',
      runtime: rpod([ctr('a', 0, 'unknown')]),
      want: { state: { waiting: {} } },
      ready: false,
    },
    {
      name: 'a repo digest is reported docker-pullable',
      runtime: rpod([ctr('a', 0, 'running', { imageID: 'busybox@sha256:def' })]),
      want: { imageID: 'docker-pullable://busybox@sha256:def' },
      ready: true,
    },
  ];
  for (const c of cases) {
    const status = generate(mkPod(['a'], c.policy ? { restartPolicy: c.policy } : {}), c.runtime, c.waiting);
    const cs = status.containerStatuses?.[0];
    t.match(cs, { name: 'a', ...c.want }, c.name);
    t.equal(cs?.ready, c.ready, `${c.name}: ready`);
    if (!('containerID' in c.want) && !c.runtime?.containers.length) t.notOk(cs && 'containerID' in cs, `${c.name}: no containerID`);
  }
  // The waiting state carries no message key when there is none.
  const plain = generate(mkPod(['a']), undefined).containerStatuses?.[0]?.state?.waiting;
  t.same(plain, { reason: 'ContainerCreating' });
});

t.test('container statuses follow spec order', async (t) => {
  const status = generate(mkPod(['z', 'a', 'm']), rpod([ctr('a', 0, 'running'), ctr('m', 0, 'running'), ctr('z', 0, 'running')]));
  t.same(status.containerStatuses?.map((c) => c.name), ['z', 'a', 'm']);
});

t.test('ephemeral containers: their own status list, outside readiness; an exited one stays terminated', async (t) => {
  const pod = mkPod(['app'], { ephemeralContainers: [{ name: 'debugger', image: 'img-d' }] });
  const running = generate(pod, rpod([ctr('app', 0, 'running'), ctr('debugger', 0, 'running')]));
  t.same(running.ephemeralContainerStatuses?.map((c) => [c.name, Object.keys(c.state ?? {})[0]]), [['debugger', 'running']]);
  t.same(running.containerStatuses?.map((c) => c.name), ['app']);
  const done = generate(pod, rpod([ctr('app', 0, 'running'), exited('debugger', 0, 1)]), { debugger: { reason: 'CrashLoopBackOff', message: 'x' } });
  t.ok(done.ephemeralContainerStatuses?.[0]?.state?.terminated, 'never waits to restart');
  t.equal(done.conditions?.find((c) => c.type === 'Ready')?.status, 'True', 'an exited ephemeral container does not make the pod unready');
  t.notOk(generate(mkPod(['app']), rpod([ctr('app', 0, 'running')])).ephemeralContainerStatuses, 'none: no list');
});

t.test('phase', async (t) => {
  const both0 = [exited('a', 0, 0), exited('b', 0, 0)];
  const oneFailed = [exited('a', 0, 0), exited('b', 0, 1)];
  const cases: { name: string; policy: string; runtime: RuntimePod | undefined; waiting?: Record<string, WaitingReason>; want: string }[] = [
    { name: 'no runtime pod', policy: 'Always', runtime: undefined, want: 'Pending' },
    { name: 'sandbox not ready yet, nothing created', policy: 'Always', runtime: rpod([], [sandbox(0, false)]), want: 'Pending' },
    { name: 'one running, one still creating', policy: 'Always', runtime: rpod([ctr('a', 0, 'running'), ctr('b', 0, 'created')]), want: 'Pending' },
    { name: 'all running', policy: 'Never', runtime: rpod([ctr('a', 0, 'running'), ctr('b', 0, 'running')]), want: 'Running' },
    { name: 'one running, one finished', policy: 'Never', runtime: rpod([ctr('a', 0, 'running'), exited('b', 0, 0)]), want: 'Running' },
    { name: 'all succeeded, Never', policy: 'Never', runtime: rpod(both0), want: 'Succeeded' },
    { name: 'all succeeded, OnFailure', policy: 'OnFailure', runtime: rpod(both0), want: 'Succeeded' },
    { name: 'all succeeded, Always: restarting', policy: 'Always', runtime: rpod(both0), want: 'Running' },
    { name: 'one failed, Never', policy: 'Never', runtime: rpod(oneFailed), want: 'Failed' },
    { name: 'one failed, OnFailure: restarting', policy: 'OnFailure', runtime: rpod(oneFailed), want: 'Running' },
    { name: 'one failed, Always: restarting', policy: 'Always', runtime: rpod(oneFailed), want: 'Running' },
    { name: 'crash-looping, Always', policy: 'Always', runtime: rpod([exited('a', 0, 1), exited('b', 0, 1)]), waiting: { a: { reason: 'CrashLoopBackOff' }, b: { reason: 'CrashLoopBackOff' } }, want: 'Running' },
    { name: 'crash-looping, OnFailure', policy: 'OnFailure', runtime: rpod(oneFailed), waiting: { b: { reason: 'CrashLoopBackOff' } }, want: 'Running' },
    { name: 'image pull failing for one container', policy: 'Always', runtime: rpod([ctr('a', 0, 'running')]), waiting: { b: { reason: 'ImagePullBackOff' } }, want: 'Pending' },
  ];
  for (const c of cases) {
    t.equal(generate(mkPod(['a', 'b'], { restartPolicy: c.policy }), c.runtime, c.waiting).phase, c.want, c.name);
  }
  // A phase the API recorded as terminal is never regressed.
  t.equal(generate(mkPod(['a'], {}, { phase: 'Succeeded' }), rpod([ctr('a', 0, 'running')])).phase, 'Succeeded');
  // An unset restart policy is Always (the API default).
  t.equal(generate(mkPod(['a'], { restartPolicy: undefined }), rpod([exited('a', 0, 0)])).phase, 'Running');
});

t.test('phase with init containers', async (t) => {
  const spec = (policy: string): Partial<PodSpec> => ({ restartPolicy: policy, initContainers: [{ name: 'init', image: 'img-init' }] });
  const cases: { name: string; policy: string; containers: RuntimeContainer[]; want: string; initialized: string }[] = [
    { name: 'init running', policy: 'Always', containers: [ctr('init', 0, 'running')], want: 'Pending', initialized: 'False' },
    { name: 'init failed, Never', policy: 'Never', containers: [exited('init', 0, 1)], want: 'Failed', initialized: 'False' },
    { name: 'init failed, OnFailure: retried', policy: 'OnFailure', containers: [exited('init', 0, 1)], want: 'Pending', initialized: 'False' },
    { name: 'init done, app running', policy: 'Always', containers: [exited('init', 0, 0), ctr('a', 0, 'running')], want: 'Running', initialized: 'True' },
  ];
  for (const c of cases) {
    const status = generate(mkPod(['a'], spec(c.policy)), rpod(c.containers));
    t.equal(status.phase, c.want, c.name);
    t.equal(status.conditions?.find((x) => x.type === 'Initialized')?.status, c.initialized, `${c.name}: Initialized`);
    t.equal(status.initContainerStatuses?.[0]?.name, 'init');
  }
  const done = generate(mkPod(['a'], spec('Always')), rpod([exited('init', 0, 0)]));
  t.equal(done.initContainerStatuses?.[0]?.ready, true, 'a finished init container is ready');
  const pending = generate(mkPod(['a'], spec('Always')), rpod([ctr('init', 0, 'running')]));
  t.match(pending.conditions?.find((x) => x.type === 'Initialized'), { reason: 'ContainersNotInitialized', message: 'containers with incomplete status: [init]' });
  t.equal(getPhase({ containers: [{ name: 'a' }] }, [], []), 'Pending', 'no status at all');
});

t.test('conditions', async (t) => {
  const ready = generate(mkPod(['a', 'b']), rpod([ctr('a', 0, 'running'), ctr('b', 0, 'running')]));
  t.same(ready.conditions, [
    { type: 'PodReadyToStartContainers', status: 'True', lastTransitionTime: NOW_ISO },
    { type: 'Initialized', status: 'True', lastTransitionTime: NOW_ISO },
    { type: 'Ready', status: 'True', lastTransitionTime: NOW_ISO },
    { type: 'ContainersReady', status: 'True', lastTransitionTime: NOW_ISO },
    { type: 'PodScheduled', status: 'True', lastTransitionTime: NOW_ISO },
  ]);

  const notReady = generate(mkPod(['a', 'b', 'c']), rpod([ctr('b', 0, 'running')], [sandbox(0, false)]));
  const byType = Object.fromEntries((notReady.conditions ?? []).map((c) => [c.type, c]));
  t.match(byType.PodReadyToStartContainers, { status: 'False' });
  t.match(byType.Ready, { status: 'False', reason: 'ContainersNotReady', message: 'containers with unready status: [a c]' });
  t.match(byType.ContainersReady, { status: 'False', reason: 'ContainersNotReady', message: 'containers with unready status: [a c]' });
  t.match(byType.PodScheduled, { status: 'True' });

  const succeeded = generate(mkPod(['a'], { restartPolicy: 'Never' }), rpod([exited('a', 0, 0)]));
  t.match(succeeded.conditions?.find((c) => c.type === 'Ready'), { status: 'False', reason: 'PodCompleted' });
  const failed = generate(mkPod(['a'], { restartPolicy: 'Never' }), rpod([exited('a', 0, 1)]));
  t.match(failed.conditions?.find((c) => c.type === 'ContainersReady'), { status: 'False', reason: 'PodFailed' });

  t.match(generate(mkPod(['a']), undefined).conditions?.[0], { type: 'PodReadyToStartContainers', status: 'False' }, 'no sandbox');
  // The newest sandbox decides, not an older ready one.
  t.match(generate(mkPod(['a']), rpod([], [sandbox(1, false), sandbox(0, true)])).conditions?.[0], { status: 'False' });
});

t.test('conditions keep their transition time while unchanged; foreign conditions and readiness gates', async (t) => {
  const earlier = '2025-12-31T00:00:00Z';
  const pod = mkPod(['a'], { readinessGates: [{ conditionType: 'example.com/lb' }] }, {
    conditions: [
      { type: 'example.com/lb', status: 'False', lastTransitionTime: earlier },
      { type: 'PodScheduled', status: 'True', lastTransitionTime: earlier },
      { type: 'Ready', status: 'True', lastTransitionTime: earlier },
    ],
  });
  const status = generate(pod, rpod([ctr('a', 0, 'running')]));
  t.same(status.conditions?.map((c) => c.type), ['example.com/lb', 'PodReadyToStartContainers', 'Initialized', 'Ready', 'ContainersReady', 'PodScheduled']);
  const byType = Object.fromEntries((status.conditions ?? []).map((c) => [c.type, c]));
  t.equal(byType.PodScheduled?.lastTransitionTime, earlier, 'unchanged: time kept');
  t.match(byType.Ready, { status: 'False', reason: 'ReadinessGatesNotReady', message: 'the status of pod readiness gate "example.com/lb" is not "True", but False', lastTransitionTime: NOW_ISO });
  t.equal(byType.ContainersReady?.status, 'True');

  const missingGate = generate(mkPod(['a'], { readinessGates: [{ conditionType: 'x' }] }), rpod([ctr('a', 0, 'running')]));
  t.match(missingGate.conditions?.find((c) => c.type === 'Ready'), { status: 'False', message: 'corresponding condition of pod readiness gate "x" does not exist.' });
});

t.test('IPs, QoS and start time', async (t) => {
  const status = generate(mkPod(['a']), rpod([ctr('a', 0, 'running')], [sandbox(0, true, ['10.0.0.5', 'fd00::5'])]));
  t.equal(status.hostIP, '192.168.1.10');
  t.same(status.hostIPs, [{ ip: '192.168.1.10' }]);
  t.equal(status.podIP, '10.0.0.5');
  t.same(status.podIPs, [{ ip: '10.0.0.5' }, { ip: 'fd00::5' }]);
  t.equal(status.qosClass, 'BestEffort');
  t.equal(status.startTime, undefined, 'the status manager owns startTime');

  const newest = generate(mkPod(['a']), rpod([], [sandbox(0, true, ['10.0.0.1']), sandbox(1, true, ['10.0.0.2']), sandbox(2, false, ['10.0.0.3'])]));
  t.equal(newest.podIP, '10.0.0.2', 'the newest ready sandbox');

  const none = generate(mkPod(['a']), rpod([ctr('a', 0, 'running')], [sandbox(0, true, [])]));
  t.notOk('podIP' in none || 'podIPs' in none, 'no IP with network none');
  t.notOk('podIP' in generate(mkPod(['a']), undefined));

  const host = generate(mkPod(['a'], { hostNetwork: true }), rpod([ctr('a', 0, 'running')], [sandbox(0, true, [])]));
  t.equal(host.podIP, '192.168.1.10');
  t.same(host.podIPs, [{ ip: '192.168.1.10' }]);

  const guaranteed = mkPod(['a']);
  guaranteed.spec!.containers[0]!.resources = { limits: { cpu: '1', memory: '1Gi' } };
  t.equal(generate(guaranteed, undefined).qosClass, 'Guaranteed');
});

t.test('conditions carry the generation they were computed from; others\' conditions are left as they are', async (t) => {
  const gated: Pod['status'] = { conditions: [{ type: 'example.com/gate', status: 'True', observedGeneration: 1 }] };
  const pod = { ...mkPod(['a'], { readinessGates: [{ conditionType: 'example.com/gate' }] }, gated), metadata: { uid: 'u1', name: 'p', namespace: 'default', generation: 4 } };
  const status = generate(pod, rpod([ctr('a', 0, 'running')]));
  const kubelet = ['PodReadyToStartContainers', 'Initialized', 'Ready', 'ContainersReady', 'PodScheduled'];
  t.same(status.conditions?.filter((c) => kubelet.includes(c.type)).map((c) => [c.type, c.observedGeneration]), kubelet.map((k) => [k, 4]));
  t.equal(status.conditions?.find((c) => c.type === 'example.com/gate')?.observedGeneration, 1, 'a readiness gate keeps its owner\'s generation');
  const static_ = generate(mkPod(['a']), rpod([ctr('a', 0, 'running')]));
  t.ok(static_.conditions?.every((c) => !('observedGeneration' in c)), 'a pod without a generation: no observedGeneration at all');
});

t.test('getPhase with container restart policies: Running while any stopped container will restart, else by exit codes', async (t) => {
  const term = (name: string, exitCode: number) => ({ name, ready: false, restartCount: 0, image: '', imageID: '', state: { terminated: { exitCode } } });
  const rules = [{ action: 'Restart', exitCodes: { operator: 'In', values: [42] } }];
  t.equal(getPhase({ restartPolicy: 'Always', containers: [{ name: 'a', restartPolicy: 'Never' }] }, [], [term('a', 3)]), 'Failed', 'its own Never: done for good, failed');
  t.equal(getPhase({ restartPolicy: 'Always', containers: [{ name: 'a', restartPolicy: 'Never' }] }, [], [term('a', 0)]), 'Succeeded');
  t.equal(getPhase({ restartPolicy: 'Never', containers: [{ name: 'a', restartPolicy: 'Never', restartPolicyRules: rules }] }, [], [term('a', 42)]), 'Running', 'a matching rule: it restarts');
  t.equal(getPhase({ restartPolicy: 'Never', containers: [{ name: 'a', restartPolicy: 'Never', restartPolicyRules: rules }, { name: 'b' }] }, [], [term('a', 1), term('b', 0)]), 'Failed', 'no rule matches: by exit codes');
  t.equal(getPhase({ restartPolicy: 'Never', containers: [{ name: 'a', restartPolicy: 'OnFailure' }, { name: 'b' }] }, [], [term('a', 1), term('b', 0)]), 'Running', 'OnFailure on one container keeps the pod running');
});
