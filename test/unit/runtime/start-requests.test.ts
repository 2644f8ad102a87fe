import { PassThrough } from 'node:stream';
import type Docker from 'dockerode';
import t from 'tap';
import type { Pod } from '../../../src/api/types.js';
import { createLogger } from '../../../src/logging/index.js';
import { DockerRuntime } from '../../../src/runtime/docker/runtime.js';

/**
 * The Engine API requests of a pod start and of the relists around it, on a fake engine that
 * records them: the infra image asked for once, a container nodelet is starting not inspected,
 * a `start` event not re-inspected, a `die` event (which the list lags) re-inspected.
 */

const NODE = 'n1';
const pod = (uid: string): Pod => ({ metadata: { name: `p-${uid}`, namespace: 'ns', uid }, spec: { containers: [{ name: 'main', image: 'busybox' }] } });
const notFound = (what: string) => Object.assign(new Error(`No such image: ${what}`), { statusCode: 404 });

interface FakeContainer {
  name: string;
  labels: Record<string, string>;
  state: 'created' | 'running' | 'exited';
  /** What the list shows when it lags the engine (a `die` not yet stored). */
  listed?: 'running';
}

function fakeEngine() {
  const requests: string[] = [];
  const images = new Set(['pause']);
  const containers = new Map<string, FakeContainer>();
  const events = new PassThrough();
  let subscribed = false;
  let gate: Promise<void> | undefined;
  let createGate: Promise<void> | undefined;
  let n = 0;
  const info = (id: string, c: FakeContainer) => ({
    Id: id,
    Created: '2026-12-01T10:00:00Z',
    Image: 'sha256:1',
    Config: { Image: 'pause', Labels: c.labels },
    HostConfig: { NetworkMode: 'none' },
    NetworkSettings: { Networks: {} },
    State: { Status: c.state, Running: c.state === 'running', Pid: c.state === 'running' ? 42 : 0, ExitCode: c.state === 'exited' ? 137 : 0, OOMKilled: false, Error: '', StartedAt: '2026-12-01T10:00:01Z', FinishedAt: c.state === 'exited' ? '2026-12-01T10:05:00Z' : '0001-01-01T00:00:00Z' },
  });
  const handle = (id: string) => ({
    id,
    start: async () => {
      requests.push('start');
      await gate;
      containers.get(id)!.state = 'running';
    },
    inspect: () => {
      requests.push('inspect');
      const c = containers.get(id);
      return c ? Promise.resolve(info(id, c)) : Promise.reject(Object.assign(new Error('gone'), { statusCode: 404 }));
    },
  });
  const docker = {
    version: () => Promise.resolve({ Version: '20.10.24', ApiVersion: '1.41' }),
    getImage: (name: string) => ({
      inspect: () => {
        requests.push('image inspect');
        return images.has(name) ? Promise.resolve({ Id: `sha256:${name}`, Config: { User: '' }, Size: 1 }) : Promise.reject(notFound(name));
      },
    }),
    pull: (name: string) => {
      requests.push('pull');
      images.add(name);
      return Promise.resolve(new PassThrough());
    },
    modem: { followProgress: (_s: unknown, done: (err: Error | null) => void) => done(null) },
    createContainer: (opts: { _query: { name: string }; _body: { Image: string; Labels: Record<string, string> } }) => {
      requests.push('create');
      if (!images.has(opts._body.Image)) return Promise.reject(notFound(opts._body.Image));
      const id = `c${++n}`;
      containers.set(id, { name: opts._query.name, labels: opts._body.Labels, state: 'created' });
      // The engine has made it; its answer may still be on the way.
      return (createGate ?? Promise.resolve()).then(() => handle(id));
    },
    getContainer: handle,
    listContainers: () => {
      requests.push('list');
      return Promise.resolve([...containers].map(([id, c]) => ({ Id: id, Names: [`/${c.name}`], Image: 'pause', ImageID: 'sha256:1', Created: 1_796_000_000, State: c.listed ?? c.state, Status: '', Labels: c.labels, HostConfig: { NetworkMode: 'none' } })));
    },
    getEvents: () => {
      subscribed = true;
      return Promise.resolve(events);
    },
  } as unknown as Docker;
  const runtime = new DockerRuntime({ docker, nodeName: NODE, infraImage: 'pause', podNetwork: 'none', log: createLogger({ verbosity: 0, format: 'json' }) });
  return {
    runtime,
    requests,
    images,
    containers,
    subscribed: () => subscribed,
    event: (id: string, action: string) => events.write(`${JSON.stringify({ Action: action, Actor: { ID: id, Attributes: containers.get(id)?.labels ?? {} } })}\n`),
    holdCreateAnswers: () => {
      let release = () => {};
      createGate = new Promise((resolve) => (release = resolve));
      return () => {
        createGate = undefined;
        release();
      };
    },
    holdStarts: () => {
      let release = () => {};
      gate = new Promise((resolve) => (release = resolve));
      return () => {
        gate = undefined;
        release();
      };
    },
    /** The requests since the last call. */
    take: () => requests.splice(0),
  };
}

async function until(what: string, ok: () => boolean): Promise<void> {
  const deadline = Date.now() + 5000;
  while (!ok()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setImmediate(resolve));
  }
}

t.test('the infra image is asked for by the first sandbox only; one removed meanwhile is pulled again', async (t) => {
  const e = fakeEngine();
  await e.runtime.runSandbox(pod('u1'), 0);
  t.same(e.take(), ['image inspect', 'create', 'start'], 'first sandbox: image, create, start');
  await e.runtime.runSandbox(pod('u2'), 0);
  t.same(e.take(), ['create', 'start'], 'second sandbox: no image inspection');
  e.images.delete('pause');
  await e.runtime.runSandbox(pod('u3'), 0);
  t.same(e.take(), ['create', 'image inspect', 'image inspect', 'pull', 'create', 'start'], 'the create answers 404: image asked, pulled, create retried');
  await e.runtime.runSandbox(pod('u4'), 0);
  t.same(e.take(), ['create', 'start']);
  await e.runtime.close();
});

t.test('a burst of first sandboxes asks for the infra image once', async (t) => {
  const e = fakeEngine();
  await Promise.all([e.runtime.runSandbox(pod('u1'), 0), e.runtime.runSandbox(pod('u2'), 0), e.runtime.runSandbox(pod('u3'), 0)]);
  t.same(e.take().filter((r) => r === 'image inspect'), ['image inspect']);
  e.images.delete('pause');
  // Gone behind nodelet's back: both creates answer 404, the image is pulled again, both succeed.
  const ids = await Promise.all([e.runtime.runSandbox(pod('u4'), 0), e.runtime.runSandbox(pod('u5'), 0)]);
  t.equal(new Set(ids.map((s) => s.id)).size, 2, 'both sandboxes made');
  t.ok(e.take().includes('pull'), 'the image pulled again');
  await e.runtime.close();
});

t.test('a sandbox create failing for another reason: the error stands, and the next sandbox asks for the image again', async (t) => {
  // 404 with the image present: not the image's fault (e.g. a missing network).
  const failing = fakeEngine();
  await failing.runtime.runSandbox(pod('u1'), 0);
  failing.take();
  const realCreate = (failing.runtime.docker as unknown as { createContainer: unknown }).createContainer;
  (failing.runtime.docker as unknown as { createContainer: () => Promise<never> }).createContainer = () => {
    failing.requests.push('create');
    return Promise.reject(Object.assign(new Error('network x not found'), { statusCode: 404 }));
  };
  await t.rejects(failing.runtime.runSandbox(pod('u2'), 0), /network x not found/);
  t.same(failing.take(), ['create', 'image inspect'], 'the image is there: the create error is returned, nothing pulled');
  (failing.runtime.docker as unknown as { createContainer: unknown }).createContainer = realCreate;
  await failing.runtime.runSandbox(pod('u3'), 0);
  t.same(failing.take(), ['image inspect', 'create', 'start'], 'after a failed create the image is asked for again');
  await failing.runtime.close();
});

t.test('relists around a start: the starting container is not inspected, then once, and a start event adds nothing', async (t) => {
  const e = fakeEngine();
  const relisted: string[] = [];
  const unwatch = e.runtime.watch((uid) => relisted.push(uid));
  await until('the event subscription', e.subscribed);
  const release = e.holdStarts();
  const started = e.runtime.runSandbox(pod('u1'), 0);
  await until('the start request', () => e.requests.includes('start'));
  e.take();
  const [during] = await e.runtime.listPods();
  t.same(e.take(), ['list'], 'listed while nodelet starts it: no inspection (it would wait for the start)');
  t.equal(during?.sandboxes[0]?.ready, false, 'reported from the list: created, not ready');
  release();
  await started;
  const id = [...e.containers.keys()][0]!;
  e.event(id, 'create');
  e.event(id, 'start');
  await until('the start event', () => relisted.length === 2);
  const [after] = await e.runtime.listPods();
  t.same(e.take(), ['list', 'inspect'], 'running now: inspected once');
  t.equal(after?.sandboxes[0]?.ready, true);
  await e.runtime.listPods();
  t.same(e.take(), ['list'], 'unchanged: the inspection is reused');
  e.event(id, 'exec_create: sh -c true');
  e.event(id, 'exec_die');
  e.event(id, 'kill');
  e.event(id, 'rename');
  await until('the rename event', () => relisted.length === 3);
  t.same(relisted, ['u1', 'u1', 'u1'], 'exec and kill events relist nothing; create, start and rename do');
  await e.runtime.listPods();
  t.same(e.take(), ['list', 'inspect'], 'the rename needs a new inspection, the others not');

  // It dies; the list still shows it running for a moment (dockerd stores the exit after the event).
  e.containers.get(id)!.state = 'exited';
  e.containers.get(id)!.listed = 'running';
  e.event(id, 'die');
  await until('the die event', () => relisted.length === 4);
  const [dead] = await e.runtime.listPods();
  t.same(e.take(), ['list', 'inspect'], 'die: inspected again although the list shows running');
  t.equal(dead?.sandboxes[0]?.running, false, 'reported as the inspection says');
  delete e.containers.get(id)!.listed;
  await e.runtime.listPods();
  t.same(e.take(), ['list'], 'the list catches up with the state the inspection answered: no new inspection');
  unwatch();
  await e.runtime.close();
});

t.test('a container made by the engine whose create answer has not reached nodelet yet is not inspected either', async (t) => {
  const e = fakeEngine();
  await e.runtime.runSandbox(pod('u0'), 0);
  const release = e.holdCreateAnswers();
  const started = e.runtime.runSandbox(pod('u1'), 0);
  await until('the create', () => e.containers.size === 2);
  e.take();
  const pods = await e.runtime.listPods();
  t.same(e.take(), ['list', 'inspect'], 'the running sandbox of u0 only');
  t.same(pods.map((p) => [p.uid, p.sandboxes[0]?.ready]).sort(), [['u0', true], ['u1', false]]);
  release();
  await started;
  t.same(e.take(), ['start']);
  await e.runtime.listPods();
  t.same(e.take(), ['list', 'inspect'], 'then inspected once it runs');
  await e.runtime.close();
});

t.test('nodelet\'s own inspection of a new sandbox stands for the next listing', async (t) => {
  const e = fakeEngine();
  // With a network plugin the sandbox is inspected after its start for its netns.
  const network = {
    name: 'fake',
    readiness: () => ({ ready: true }),
    hasCapability: () => false,
    podNetworkStatus: () => ({ ips: ['10.0.0.2'] }),
    setUpPod: () => Promise.resolve({ ips: ['10.0.0.2'] }),
    tearDownPod: () => Promise.resolve(),
    garbageCollect: () => Promise.resolve([]),
  };
  const docker = e.runtime.docker;
  const runtime = new DockerRuntime({ docker, nodeName: NODE, infraImage: 'pause', podNetwork: 'none', network: network as never, log: createLogger({ verbosity: 0, format: 'json' }) });
  // netnsPathOf needs the sandbox's pid: the fake's running containers have one.
  const started = await runtime.runSandbox(pod('u1'), 0).catch((err: unknown) => err);
  t.notOk(started instanceof Error, `started: ${String(started)}`);
  t.same(e.take(), ['image inspect', 'create', 'start', 'inspect'], 'inspected once, for its netns');
  const [listed] = await runtime.listPods();
  t.same(e.take(), ['list'], 'the listing reuses that inspection');
  t.same(listed?.sandboxes[0]?.ips, ['10.0.0.2']);
  await runtime.close();
  await e.runtime.close();
});
