import t from 'tap';
import type { Container, Pod } from '../../../src/api/types.js';
import type { EventSubject } from '../../../src/events/recorder.js';
import { Backoff } from '../../../src/kubelet/backoff.js';
import type { KillContainerOptions, KillTarget } from '../../../src/kubelet/kill.js';
import type { PodActions } from '../../../src/kubelet/pod-actions.js';
import { PodStarter, type StartRuntime } from '../../../src/kubelet/start.js';
import { StartFailures } from '../../../src/kubelet/start-failures.js';
import { createLogger } from '../../../src/logging/index.js';
import type { RuntimePod, RuntimeSandbox, SandboxConfig } from '../../../src/runtime/types.js';

/** A runtime that logs what it is asked; each failure is switched on by a test. */
class FakeRuntime implements StartRuntime {
  readonly calls: string[] = [];
  pullFails: string | undefined;
  startFails: string | undefined;
  sandboxFails: string | undefined;
  networkReady = true;
  hookExit = 0;
  async imageStatus(): Promise<undefined> {
    return undefined;
  }
  async pullImage(image: string) {
    this.calls.push(`pull ${image}`);
    if (this.pullFails !== undefined) throw new Error(this.pullFails);
    return { id: `sha256:${image}`, user: '', sizeBytes: 1 };
  }
  async runSandbox(_pod: Pod, attempt: number) {
    this.calls.push(`runSandbox ${attempt}`);
    if (this.sandboxFails !== undefined) throw new Error(this.sandboxFails);
    return { id: 'sb1', ips: ['10.0.0.5'] };
  }
  networkStatus() {
    return this.networkReady ? { readiness: { ready: true as const }, hostPorts: false } : { readiness: { ready: false as const, reason: 'NetworkPluginNotReady', message: 'no CNI config' }, hostPorts: false };
  }
  async startContainer(_pod: Pod, container: Container, _sandbox: RuntimeSandbox, attempt: number): Promise<string> {
    this.calls.push(`start ${container.name} ${attempt}`);
    if (this.startFails !== undefined) throw new Error(this.startFails);
    return `${container.name}-id`;
  }
  async removeContainer(id: string): Promise<void> {
    this.calls.push(`remove ${id}`);
  }
  async exec(id: string, cmd: string[]): Promise<{ kind: 'exited'; exitCode: number }> {
    this.calls.push(`exec ${id} ${cmd.join(' ')}`);
    return { kind: 'exited', exitCode: this.hookExit };
  }
  async portForward(): Promise<void> {
    throw new Error('no port-forward here');
  }
}

const sandbox: RuntimeSandbox = { id: 'sb1', attempt: 0, ready: true, createdAt: new Date(0), ips: ['10.0.0.5'] };
const app: Container = { name: 'app', image: 'busybox', imagePullPolicy: 'Always' };
const pod = (extra: Partial<NonNullable<Pod['spec']>> = {}): Pod => ({ metadata: { uid: 'u1', name: 'web', namespace: 'default' }, spec: { containers: [app], ...extra } });

function setup() {
  const runtime = new FakeRuntime();
  const events: string[] = [];
  const scheduled: string[] = [];
  const kills: { target: KillTarget; id: string; opts: KillContainerOptions | undefined }[] = [];
  const failures = new StartFailures({ containerBackoff: new Backoff({ initialMs: 10_000, maxMs: 300_000 }), sandboxBackoff: new Backoff({ initialMs: 1000, maxMs: 10_000 }) });
  const log = createLogger({ verbosity: 0, format: 'json' });
  const starter = new PodStarter({
    nodeIP: '10.0.0.1',
    runtime,
    record: (subject: EventSubject, type, reason, message) => events.push(`${type} ${reason} ${subject.kind === 'Node' ? 'node' : ((subject as { fieldPath?: string }).fieldPath ?? 'pod')}: ${message}`),
    nodeSubject: { kind: 'Node', metadata: { name: 'n1', uid: 'n1', namespace: '' } },
    log,
    failures,
    pods: { getPod: (): RuntimePod | undefined => undefined, relist: async () => undefined },
    status: { getPodStatus: () => undefined },
    killer: {
      killContainer: async (target, _pod, container, opts) => void kills.push({ target, id: container.id, opts }),
      stopSandboxes: async (sandboxes) => void runtime.calls.push(...sandboxes.map((s) => `stopSandbox ${s.id}`)),
    },
    schedule: (uid) => scheduled.push(`now ${uid}`),
    scheduleAfter: (uid, ms) => scheduled.push(`after ${uid} ${ms}`),
  });
  return { runtime, events, scheduled, kills, failures, starter, log };
}

const actionsFor = (extra: Partial<PodActions> = {}): PodActions => ({ createSandbox: undefined, kill: [], start: [{ container: app, attempt: 0, reason: 'new' }], remove: [], waiting: new Map(), resyncAfterMs: undefined, ...extra });

t.test('a start: pull, create and start, then Created and Started; no failure is held', async (t) => {
  const { runtime, events, scheduled, failures, starter, log } = setup();
  await starter.startContainer(pod(), app, sandbox, 0, log);
  t.same(runtime.calls, ['pull busybox:latest', 'start app 0']);
  t.same(events.filter((e) => !e.includes('Pull')), ['Normal Created spec.containers{app}: Created container app', 'Normal Started spec.containers{app}: Started container app']);
  t.same(scheduled, []);
  t.equal(failures.lastFailure(pod(), app), undefined);
});

t.test('a failed pull: Failed "Error: ErrImagePull", held; the next sync shows ImagePullBackOff with the image manager\'s events', async (t) => {
  const { runtime, events, scheduled, failures, starter, log } = setup();
  runtime.pullFails = 'manifest unknown';
  await starter.startContainer(pod(), app, sandbox, 0, log);
  t.notOk(runtime.calls.includes('start app 0'), 'nothing created');
  t.ok(events.includes('Warning Failed spec.containers{app}: Error: ErrImagePull'), 'the kuberuntime event');
  t.equal(failures.lastFailure(pod(), app)?.reason, 'ErrImagePull');
  t.same(scheduled, ['after u1 10000', 'now u1'], 'synced again now and once the back-off ends');
  events.length = 0;
  const actions = actionsFor();
  starter.holdFailedStarts(pod(), actions, Date.now());
  t.same(actions.start, [], 'held back');
  t.equal(actions.waiting.get('app')?.reason, 'ImagePullBackOff');
  t.match(actions.waiting.get('app')?.message, /^Back-off pulling image "busybox:latest": ErrImagePull: .*manifest unknown/);
  t.ok((actions.resyncAfterMs ?? 0) > 9000 && (actions.resyncAfterMs ?? 0) <= 10_000, 'resynced when the back-off ends');
  t.same(events, ['Normal BackOff spec.containers{app}: Back-off pulling image "busybox:latest"', 'Warning Failed spec.containers{app}: Error: ImagePullBackOff']);
});

t.test('a failed create/start: CreateContainerError with the engine\'s message; a later start clears it', async (t) => {
  const { runtime, events, failures, starter, log } = setup();
  runtime.startFails = 'OCI runtime create failed: exec format error';
  await starter.startContainer(pod(), app, sandbox, 0, log);
  t.same(failures.lastFailure(pod(), app), { reason: 'CreateContainerError', message: 'OCI runtime create failed: exec format error' });
  t.ok(events.includes('Warning Failed spec.containers{app}: Error: OCI runtime create failed: exec format error'));
  const held = actionsFor();
  starter.holdFailedStarts(pod(), held, Date.now());
  t.equal(held.waiting.get('app')?.reason, 'CreateContainerError', 'held with its own reason (no image back-off)');
  runtime.startFails = undefined;
  await starter.startContainer(pod(), app, sandbox, 1, log);
  t.equal(failures.lastFailure(pod(), app), undefined);
});

t.test('a failed config: CreateContainerConfigError with its message, a FailedMount event for a volume', async (t) => {
  const { runtime, events, failures, starter, log } = setup();
  const bad: Container = { ...app, volumeDevices: [{ name: 'disk', devicePath: '/dev/xvda' }] };
  await starter.startContainer(pod({ containers: [bad] }), bad, sandbox, 0, log);
  t.notOk(runtime.calls.some((c) => c.startsWith('start')), 'nothing created');
  const message = 'volumeDevice "disk" at /dev/xvda: raw block volumes are not supported by nodelet';
  t.same(failures.lastFailure(pod({ containers: [bad] }), bad), { reason: 'CreateContainerConfigError', message });
  t.ok(events.includes(`Warning Failed spec.containers{app}: Error: ${message}`));
});

t.test('a failed postStart hook: FailedPostStartHook, then the container is killed through the killer', async (t) => {
  const { runtime, events, kills, starter, log } = setup();
  runtime.hookExit = 1;
  const hooked: Container = { ...app, lifecycle: { postStart: { exec: { command: ['false'] } } } };
  await starter.startContainer(pod({ containers: [hooked] }), hooked, sandbox, 0, log);
  t.ok(runtime.calls.includes('exec app-id false'));
  t.ok(events.some((e) => e.startsWith('Warning FailedPostStartHook spec.containers{app}: Exec lifecycle hook (["false"]) for Container "app" failed')));
  t.same(kills.map((k) => [k.id, k.opts?.message, k.target.sandboxes[0]?.id]), [['app-id', 'FailedPostStartHook', 'sb1']]);
});

t.test('a failed sandbox: FailedCreatePodSandBox, held for the sandbox back-off with the containers waiting', async (t) => {
  const { runtime, events, scheduled, starter, log } = setup();
  runtime.sandboxFails = 'failed to set up pod network';
  const made = await starter.createSandbox(pod(), undefined, 0, [], log);
  t.equal(made, undefined);
  t.same(events.filter((e) => !e.includes('MissingClusterDNS')), ['Warning FailedCreatePodSandBox pod: Failed to create pod sandbox: failed to set up pod network']);
  t.ok(events.some((e) => e.startsWith('Warning MissingClusterDNS node: ')), 'the sandbox config\'s node warning is about the node');
  t.same(scheduled, ['after u1 1000', 'now u1']);
  const actions = actionsFor({ createSandbox: 0 });
  starter.holdFailedStarts(pod(), actions, Date.now());
  t.equal(actions.createSandbox, undefined, 'no new sandbox during the back-off');
  t.same(actions.start, []);
  t.same(actions.waiting.get('app'), { reason: 'ContainerCreating', message: 'Failed to create pod sandbox: failed to set up pod network' });
});

t.test('a not-ready network: NetworkNotReady, no sandbox, tried again in 2 s; a host-network pod still gets one', async (t) => {
  const { runtime, events, scheduled, starter, log } = setup();
  runtime.networkReady = false;
  t.equal(await starter.createSandbox(pod(), undefined, 0, [], log), undefined);
  t.match(events[0], /^Warning NetworkNotReady pod: network is not ready: container runtime network not ready: NetworkReady=false reason:NetworkPluginNotReady/);
  t.same(scheduled, ['after u1 2000']);
  t.notOk(runtime.calls.includes('runSandbox 0'));
  const made = await starter.createSandbox(pod({ hostNetwork: true }), undefined, 1, [], log);
  t.equal(made?.id, 'sb1');
  t.ok(events.includes('Normal SandboxChanged pod: Pod sandbox changed, it will be killed and re-created.'), 'attempt 1 replaces a sandbox');
});

t.test('syncPod: kills, removals, the sandbox, then the starts, in SyncPod\'s order', async (t) => {
  const { runtime, kills, starter } = setup();
  const current: RuntimePod = { uid: 'u1', name: 'web', namespace: 'default', sandboxes: [sandbox], containers: [] };
  let resized = 0;
  await starter.syncPod(pod(), current, actionsFor({ kill: [{ id: 'old', name: 'app', message: 'Container app definition changed, will be restarted' }], remove: ['dead'] }), async () => void resized++);
  t.same(kills.map((k) => k.id), ['old']);
  t.same(runtime.calls, ['remove dead', 'pull busybox:latest', 'start app 0']);
  t.equal(resized, 1, 'the running containers are resized when the sandbox stays');
  runtime.calls.length = 0;
  await starter.syncPod(pod(), current, actionsFor({ createSandbox: 1 }), async () => void resized++);
  t.same(runtime.calls, ['runSandbox 1', 'pull busybox:latest', 'start app 0']);
  t.equal(resized, 1, 'not with a new sandbox');
});

/** A runtime that creates and starts in two steps, whose sandbox starts only once the first container was created (so the order is the test's, not the scheduler's). */
class TwoStepRuntime extends FakeRuntime {
  sandboxStartFails: string | undefined;
  #created: (() => void) | undefined;
  override async runSandbox(_pod: Pod, attempt: number, config?: SandboxConfig) {
    this.calls.push(`runSandbox ${attempt}`);
    if (config?.onCreated) {
      const created = new Promise<void>((resolve) => (this.#created = resolve));
      config.onCreated('sb1');
      await created;
    }
    this.calls.push('sandbox started');
    if (this.sandboxStartFails !== undefined) throw new Error(this.sandboxStartFails);
    return { id: 'sb1', ips: ['10.0.0.5'] };
  }
  async createContainer(_pod: Pod, container: Container, sandbox: RuntimeSandbox, attempt: number): Promise<string> {
    this.calls.push(`create ${container.name} ${attempt} in ${sandbox.id}`);
    this.#created?.();
    return `${container.name}-id`;
  }
  async startCreatedContainer(id: string): Promise<void> {
    this.calls.push(`start ${id}`);
    if (this.startFails !== undefined) throw new Error(this.startFails);
  }
}

function twoStep() {
  const s = setup();
  const runtime = new TwoStepRuntime();
  const starter = new PodStarter({
    nodeIP: '10.0.0.1',
    runtime,
    record: (_subject, type, reason, message) => s.events.push(`${type} ${reason}: ${message}`),
    nodeSubject: { kind: 'Node', metadata: { name: 'n1', uid: 'n1', namespace: '' } },
    log: s.log,
    failures: s.failures,
    pods: { getPod: () => undefined, relist: async () => undefined },
    status: { getPodStatus: () => undefined },
    killer: { killContainer: async () => undefined, stopSandboxes: async () => undefined },
    schedule: (uid) => s.scheduled.push(`now ${uid}`),
    scheduleAfter: (uid, ms) => s.scheduled.push(`after ${uid} ${ms}`),
  });
  return { ...s, runtime, starter };
}

t.test('a new sandbox\'s first container is created while the sandbox starts, and started after it', async (t) => {
  const { runtime, events, starter } = twoStep();
  const sidecar: Container = { name: 'second', image: 'busybox', imagePullPolicy: 'Always' };
  await starter.syncPod(pod({ containers: [app, sidecar] }), undefined, actionsFor({ createSandbox: 0, start: [{ container: app, attempt: 0, reason: 'new' }, { container: sidecar, attempt: 0, reason: 'new' }] }), async () => undefined);
  t.same(runtime.calls, ['runSandbox 0', 'pull busybox:latest', 'create app 0 in sb1', 'sandbox started', 'start app-id', 'pull busybox:latest', 'start second 0'], 'only the first container moves forward');
  t.same(events.filter((e) => e.startsWith('Normal Created')), ['Normal Created: Created container app', 'Normal Created: Created container second']);
});

t.test('a pod that reads its own IP waits for the sandbox before anything of its first container', async (t) => {
  const { runtime, starter } = twoStep();
  const reader: Container = { ...app, env: [{ name: 'IP', valueFrom: { fieldRef: { fieldPath: 'status.podIP' } } }] };
  await starter.syncPod(pod({ containers: [reader] }), undefined, actionsFor({ createSandbox: 0, start: [{ container: reader, attempt: 0, reason: 'new' }] }), async () => undefined);
  t.same(runtime.calls, ['runSandbox 0', 'sandbox started', 'pull busybox:latest', 'start app 0']);
});

t.test('a sandbox that fails after its first container was created takes that container with it', async (t) => {
  const { runtime, events, starter } = twoStep();
  runtime.sandboxStartFails = 'failed to set up pod network';
  await starter.syncPod(pod(), undefined, actionsFor({ createSandbox: 0 }), async () => undefined);
  t.same(runtime.calls, ['runSandbox 0', 'pull busybox:latest', 'create app 0 in sb1', 'sandbox started', 'remove app-id']);
  t.ok(events.some((e) => e.startsWith('Warning FailedCreatePodSandBox')));
  t.notOk(events.some((e) => e.startsWith('Normal Started')), 'nothing started');
});

t.test('an early-created container the engine will not start: CreateContainerError, as any start', async (t) => {
  const { runtime, events, failures, starter } = twoStep();
  runtime.startFails = 'OCI runtime create failed';
  await starter.syncPod(pod(), undefined, actionsFor({ createSandbox: 0 }), async () => undefined);
  t.same(runtime.calls.slice(-1), ['start app-id']);
  t.ok(events.includes('Warning Failed: Error: OCI runtime create failed'));
  t.equal(failures.lastFailure(pod(), app)?.reason, 'CreateContainerError');
});
