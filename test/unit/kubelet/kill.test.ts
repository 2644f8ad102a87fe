import t from 'tap';
import type { Pod } from '../../../src/api/types.js';
import type { EventSubject } from '../../../src/events/recorder.js';
import { PodKiller, terminationGrace, type KillRuntime } from '../../../src/kubelet/kill.js';
import { createLogger } from '../../../src/logging/index.js';
import type { RuntimeContainer, RuntimePod } from '../../../src/runtime/types.js';

/** A runtime that logs what it is asked; `exec` answers with `execExit` (a preStop `exec` hook). */
class FakeRuntime implements KillRuntime {
  readonly calls: string[] = [];
  execExit = 0;
  failRemovals = new Set<string>();
  failSandboxStops = false;
  async stopContainer(id: string, graceSeconds: number): Promise<void> {
    this.calls.push(`stop ${id} ${graceSeconds}`);
  }
  async stopSandbox(id: string): Promise<void> {
    this.calls.push(`stopSandbox ${id}`);
    if (this.failSandboxStops) throw new Error('netplugin failed');
  }
  async removeContainer(id: string): Promise<void> {
    this.calls.push(`remove ${id}`);
    if (this.failRemovals.has(id)) throw new Error('device or resource busy');
  }
  async exec(id: string, cmd: string[]): Promise<{ kind: 'exited'; exitCode: number }> {
    this.calls.push(`exec ${id} ${cmd.join(' ')}`);
    return { kind: 'exited', exitCode: this.execExit };
  }
  async portForward(): Promise<void> {
    throw new Error('no port-forward here');
  }
}

function setup() {
  const runtime = new FakeRuntime();
  const events: { subject: EventSubject; type: string; reason: string; message: string }[] = [];
  const killer = new PodKiller({
    runtime,
    record: (subject, type, reason, message) => events.push({ subject, type, reason, message }),
    log: createLogger({ verbosity: 0, format: 'json' }),
    tearDownVolumes: async (uid) => void runtime.calls.push(`tearDown ${uid}`),
    removePodCgroup: async (uid) => void runtime.calls.push(`removeCgroup ${uid}`),
  });
  return { runtime, events, killer };
}

const container = (id: string, name: string, state: RuntimeContainer['state'] = 'running', gracePeriodSeconds?: number): RuntimeContainer => ({
  id, name, attempt: 0, restartCount: 0, hash: 'h', image: 'busybox', imageID: 'sha256:x', state, createdAt: new Date(0), sandboxId: 'sb1',
  ...(gracePeriodSeconds !== undefined ? { gracePeriodSeconds } : {}),
});

const runtimePod = (containers: RuntimeContainer[], ready = true): RuntimePod => ({
  uid: 'u1', name: 'web', namespace: 'default',
  sandboxes: [{ id: 'sb1', attempt: 0, ready, createdAt: new Date(0), ips: ['10.0.0.5'] }],
  containers,
});

const spec = (extra: Partial<NonNullable<Pod['spec']>> = {}, meta: Partial<NonNullable<Pod['metadata']>> = {}): Pod => ({
  metadata: { uid: 'u1', name: 'web', namespace: 'default', ...meta },
  spec: {
    terminationGracePeriodSeconds: 20,
    containers: [
      { name: 'app', image: 'busybox', lifecycle: { preStop: { exec: { command: ['drain'] } } } },
      { name: 'side', image: 'busybox' },
    ],
    ...extra,
  },
});

t.test('killContainer: Killing, then the preStop hook in the container, then the stop with what is left of the grace period', async (t) => {
  const { runtime, events, killer } = setup();
  await killer.killContainer(runtimePod([]), spec(), container('c1', 'app'));
  t.same(runtime.calls, ['exec c1 drain', 'stop c1 20'], 'hook first, then the pod\'s grace period (the hook took no whole second)');
  t.same(events.map((e) => `${e.reason}: ${e.message}`), ['Killing: Stopping container app']);
  t.equal(events[0]?.subject.fieldPath, 'spec.containers{app}');
  t.equal(events[0]?.subject.metadata?.uid, 'u1');
});

t.test('killContainer: a failed preStop hook is a FailedPreStopHook event, and the container is stopped anyway', async (t) => {
  const { runtime, events, killer } = setup();
  runtime.execExit = 1;
  await killer.killContainer(runtimePod([]), spec(), container('c1', 'app'), { grace: 5, message: 'Container app failed liveness probe, will be restarted' });
  t.same(runtime.calls, ['exec c1 drain', 'stop c1 5']);
  t.same(events.map((e) => e.reason), ['Killing', 'FailedPreStopHook']);
  t.equal(events[0]?.message, 'Container app failed liveness probe, will be restarted', 'the caller\'s message');
  t.match(events[1]?.message, /Exec lifecycle hook \(\["drain"\]\) for Container "app" failed/);
});

t.test('killContainer: no hook without a grace period, without a ready sandbox, or for a container without one', async (t) => {
  const { runtime, killer } = setup();
  await killer.killContainer(runtimePod([]), spec(), container('c1', 'app'), { grace: 0 });
  await killer.killContainer(runtimePod([], false), spec(), container('c2', 'app'), { grace: 3 });
  await killer.killContainer(runtimePod([]), spec(), container('c3', 'side'), { grace: 3 });
  t.same(runtime.calls, ['stop c1 0', 'stop c2 3', 'stop c3 3']);
});

t.test('killContainer without the spec (a pod gone while nodelet was down): Killing on the pod rebuilt from the runtime, the recorded grace period, no hook', async (t) => {
  const { runtime, events, killer } = setup();
  await killer.killContainer(runtimePod([]), undefined, container('c1', 'app', 'running', 12));
  t.same(runtime.calls, ['stop c1 12']);
  t.same(events[0]?.subject, { kind: 'Pod', apiVersion: 'v1', metadata: { name: 'web', namespace: 'default', uid: 'u1' }, fieldPath: 'spec.containers{app}' });
  t.equal(events[0]?.reason, 'Killing');
});

t.test('terminationGrace: the deletion grace period, else the spec\'s, else the recorded one, else 30 s (setTerminationGracePeriod)', async (t) => {
  const c = container('c1', 'app', 'running', 12);
  t.equal(terminationGrace(spec({}, { deletionGracePeriodSeconds: 4 }), c), 4);
  t.equal(terminationGrace(spec(), c), 20);
  t.equal(terminationGrace(undefined, c), 12);
  t.equal(terminationGrace(undefined, container('c2', 'app')), 30);
});

t.test('killPod: every running container killed, the ready sandbox stopped, nothing removed unless asked', async (t) => {
  const { runtime, events, killer } = setup();
  await killer.killPod(runtimePod([container('c1', 'app'), container('c2', 'side'), container('c0', 'side', 'exited')]), spec(), { grace: 7 });
  t.same(runtime.calls.sort(), ['exec c1 drain', 'stop c1 7', 'stop c2 7', 'stopSandbox sb1'].sort());
  t.same(events.map((e) => e.message).sort(), ['Stopping container app', 'Stopping container side']);
});

t.test('killPod with remove and tearDown (an API delete, a pod gone from its source): preStop hooks too, then every container and sandbox removed, then the volumes and the cgroup', async (t) => {
  const { runtime, killer } = setup();
  await killer.killPod(runtimePod([container('c1', 'app'), container('c0', 'app', 'exited')]), spec(), { grace: 9, remove: true, tearDown: true });
  t.same(runtime.calls, ['exec c1 drain', 'stop c1 9', 'stopSandbox sb1', 'remove c1', 'remove c0', 'remove sb1', 'tearDown u1', 'removeCgroup u1']);
});

t.test('killPod: a failed removal does not stop the others or the teardown, and is thrown at the end; a failed network teardown is not fatal', async (t) => {
  const { runtime, killer } = setup();
  runtime.failRemovals.add('c1');
  runtime.failSandboxStops = true;
  await t.rejects(killer.killPod(runtimePod([container('c1', 'side'), container('c2', 'side')]), spec(), { remove: true, tearDown: true }), /device or resource busy/);
  t.same(runtime.calls.slice(2), ['stopSandbox sb1', 'remove c1', 'remove c2', 'remove sb1', 'tearDown u1', 'removeCgroup u1']);
});
