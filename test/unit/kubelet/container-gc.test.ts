import t from 'tap';
import { ContainerGC, DEFAULT_CONTAINER_GC_POLICY, podStateProvider, type ContainerGCPolicy } from '../../../src/kubelet/container-gc.js';
import { planContainerGC, type ContainerGCInput, type PodStateProvider } from '../../../src/kubelet/container-gc-plan.js';
import { createLogger } from '../../../src/logging/index.js';
import type { RuntimeContainer, RuntimePod, RuntimeSandbox } from '../../../src/runtime/types.js';

const NOW = 1_000_000_000;
const MIN = 60_000;

/** Instance `attempt` of container `name` in pod `uid`, created `ageMs` ago (older attempts older by default). */
const ctr = (uid: string, name: string, attempt: number, state: RuntimeContainer['state'] = 'exited', extra: Partial<RuntimeContainer> = {}): RuntimeContainer => ({
  id: `${uid}/${name}-${attempt}`,
  name,
  attempt,
  restartCount: attempt,
  hash: 'h',
  image: 'img',
  imageID: 'sha256:1',
  state,
  createdAt: new Date(NOW - 10 * MIN + attempt * 1000),
  sandboxId: `${uid}/sb0`,
  ...extra,
});
const sb = (uid: string, attempt: number, ready = false, extra: Partial<RuntimeSandbox> = {}): RuntimeSandbox => ({
  id: `${uid}/sb${attempt}`,
  attempt,
  ready,
  createdAt: new Date(NOW - 20 * MIN + attempt * 1000),
  ips: [],
  ...extra,
});
const rpod = (uid: string, sandboxes: RuntimeSandbox[], containers: RuntimeContainer[]): RuntimePod => ({ uid, name: uid, namespace: 'ns', sandboxes, containers });

/** A pod state where the pods in `content` should lose their content and those in `runtime` their runtime. */
const state = (content: string[] = [], runtime: string[] = []): PodStateProvider => ({
  shouldPodContentBeRemoved: (uid) => content.includes(uid),
  shouldPodRuntimeBeRemoved: (uid) => runtime.includes(uid) || content.includes(uid),
});
const plan = (pods: RuntimePod[], policy: Partial<ContainerGCPolicy> = {}, more: Partial<ContainerGCInput> = {}) =>
  planContainerGC({ pods, policy: { ...DEFAULT_CONTAINER_GC_POLICY, ...policy }, now: NOW, allSourcesReady: true, evictNonDeletedPods: false, state: state(), ...more });

/** A crash-looping container: attempt `n` running (or exited with `lastRunning` false), attempts 0..n-1 dead. */
const loop = (uid: string, name: string, n: number, lastRunning = true) =>
  Array.from({ length: n + 1 }, (_, i) => ctr(uid, name, n - i, i === 0 && lastRunning ? 'running' : 'exited'));

t.test('MaxPerPodContainer: the newest N dead instances of each container are kept, older ones go, oldest first', async (t) => {
  const pods = [rpod('u1', [sb('u1', 0, true)], [...loop('u1', 'a', 5), ...loop('u1', 'b', 2)])];
  t.same(plan(pods, { maxPerPodContainer: 1 }).containers, ['u1/a-3', 'u1/a-2', 'u1/a-1', 'u1/a-0', 'u1/b-0'], 'default 1: the previous instance of each stays');
  t.same(plan(pods, { maxPerPodContainer: 3 }).containers, ['u1/a-1', 'u1/a-0']);
  t.same(plan(pods, { maxPerPodContainer: 0 }).containers.sort(), ['u1/a-0', 'u1/a-1', 'u1/a-2', 'u1/a-3', 'u1/a-4', 'u1/b-0', 'u1/b-1'], '0: every dead instance');
  t.same(plan(pods, { maxPerPodContainer: -1 }).containers, [], 'negative: no limit');
});

t.test('running containers are never chosen, whatever the policy or the pod state', async (t) => {
  const pods = [rpod('u1', [sb('u1', 0, true)], [ctr('u1', 'a', 1, 'running'), ctr('u1', 'a', 0, 'running'), ctr('u1', 'b', 0, 'exited')])];
  const all = plan(pods, { maxPerPodContainer: 0, maxContainers: 0 }, { state: state(['u1']), evictNonDeletedPods: true });
  t.same(all.containers, ['u1/b-0']);
  t.same(all.sandboxes, [], 'a ready sandbox holding running containers stays');
});

t.test('a created container is a candidate unless it is the newest instance of its name (it may be starting now)', async (t) => {
  const pods = [rpod('u1', [sb('u1', 0, true)], [ctr('u1', 'a', 2, 'created'), ctr('u1', 'a', 1, 'created'), ctr('u1', 'a', 0, 'exited')])];
  t.same(plan(pods, { maxPerPodContainer: 0 }).containers.sort(), ['u1/a-0', 'u1/a-1']);
});

t.test('MinAge: dead containers created more recently are not candidates and do not count', async (t) => {
  const young = (a: number) => ctr('u1', 'a', a, 'exited', { createdAt: new Date(NOW - 30_000) });
  const pods = [rpod('u1', [sb('u1', 0, true)], [ctr('u1', 'a', 4, 'running'), young(3), young(2), ctr('u1', 'a', 1), ctr('u1', 'a', 0)])];
  t.same(plan(pods, { minAgeMs: MIN }).containers, ['u1/a-0'], 'of the two old enough, the newest is kept');
  t.same(plan(pods, { minAgeMs: MIN, maxPerPodContainer: 0 }).containers.sort(), ['u1/a-0', 'u1/a-1'], 'the young ones stay even at 0');
  t.same(plan(pods, { minAgeMs: 0 }).containers, ['u1/a-2', 'u1/a-1', 'u1/a-0']);
  t.same(plan(pods, { minAgeMs: 30_000, maxPerPodContainer: 0 }).containers.length, 4, 'exactly MinAge old is old enough (upstream: newestGCTime.Before(createdAt))');
});

t.test('MaxContainers: an equal share per evict unit (at least 1), then the oldest by attempt across units', async (t) => {
  const pods = [
    rpod('u1', [sb('u1', 0, true)], [...loop('u1', 'a', 4), ...loop('u1', 'b', 2)]),
    rpod('u2', [sb('u2', 0, true)], loop('u2', 'c', 3)),
  ];
  // Dead: a 0..3 (4), b 0..1 (2), c 0..2 (3) = 9 in 3 units.
  const six = plan(pods, { maxPerPodContainer: -1, maxContainers: 6 });
  t.same(six.containers.sort(), ['u1/a-0', 'u1/a-1', 'u2/c-0'], '6 / 3 units = 2 each: a loses 2, c loses 1, b keeps its 2');
  const four = plan(pods, { maxPerPodContainer: -1, maxContainers: 4 });
  // 4 / 3 = 1 each (a-3, b-1, c-2), 3 <= 4: nothing more.
  t.same(four.containers.sort(), ['u1/a-0', 'u1/a-1', 'u1/a-2', 'u1/b-0', 'u2/c-0', 'u2/c-1']);
  const two = plan(pods, { maxPerPodContainer: -1, maxContainers: 2 });
  // 2 / 3 = 0, at least 1 each: a-3, b-1, c-2 left; one more goes, the lowest attempt: b-1.
  t.same(two.containers.sort(), ['u1/a-0', 'u1/a-1', 'u1/a-2', 'u1/b-0', 'u1/b-1', 'u2/c-0', 'u2/c-1']);
  t.same(plan(pods, { maxPerPodContainer: -1, maxContainers: 0 }).containers.length, 9, '0: none kept');
  t.same(plan(pods, { maxPerPodContainer: -1, maxContainers: 9 }).containers, [], 'at the limit: nothing');
  t.same(plan(pods, { maxPerPodContainer: 1, maxContainers: 2 }).containers.filter((id) => id.endsWith('b-1') || id.endsWith('a-3') || id.endsWith('c-2')), ['u1/b-1'], 'MaxPerPodContainer first, then MaxContainers');
});

t.test('equal attempts across units: the earlier created goes first', async (t) => {
  const pods = [
    rpod('u1', [sb('u1', 0, true)], [ctr('u1', 'a', 1, 'running'), ctr('u1', 'a', 0, 'exited', { createdAt: new Date(NOW - 5 * MIN) })]),
    rpod('u2', [sb('u2', 0, true)], [ctr('u2', 'a', 1, 'running'), ctr('u2', 'a', 0, 'exited', { createdAt: new Date(NOW - 6 * MIN) })]),
  ];
  t.same(plan(pods, { maxContainers: 1 }).containers, ['u2/a-0']);
});

t.test('a pod whose content should be removed loses every dead container and every inactive sandbox, once all sources are ready', async (t) => {
  const gone = rpod('gone', [sb('gone', 1, false, { id: 'gone/sb1' }), sb('gone', 0)], [ctr('gone', 'a', 1, 'exited', { sandboxId: 'gone/sb1' }), ctr('gone', 'a', 0, 'exited', { sandboxId: 'gone/sb0' })]);
  const live = rpod('live', [sb('live', 0, true)], [ctr('live', 'a', 1, 'running'), ctr('live', 'a', 0)]);
  const ready = plan([gone, live], {}, { state: state(['gone']) });
  t.same(ready.containers.sort(), ['gone/a-0', 'gone/a-1']);
  t.same(ready.sandboxes.sort(), ['gone/sb0', 'gone/sb1'], 'the newest too: nothing of the pod is needed');
  const notReady = plan([gone, live], {}, { state: state(['gone']), allSourcesReady: false });
  t.same(notReady.containers, ['gone/a-0'], 'sources not ready: only the policy applies');
  t.same(notReady.sandboxes, ['gone/sb0'], 'sb1 stays while a kept container (a-1) names it; sb0 no longer named');
  const loose = plan([gone, live], { maxPerPodContainer: -1 }, { state: state(['gone']), allSourcesReady: false });
  t.same([loose.containers, loose.sandboxes], [[], []], 'sources not ready, no limit: nothing');
});

t.test('dead sandboxes: each pod keeps its newest; a ready one, or one a kept container names, stays', async (t) => {
  const pod = rpod('u1', [sb('u1', 3, true), sb('u1', 2), sb('u1', 1), sb('u1', 0)], [ctr('u1', 'a', 5, 'running', { sandboxId: 'u1/sb3' }), ctr('u1', 'a', 4, 'exited', { sandboxId: 'u1/sb2' }), ctr('u1', 'a', 3, 'exited', { sandboxId: 'u1/sb1' })]);
  t.same(plan([pod]).sandboxes, ['u1/sb1', 'u1/sb0'], 'a-3 goes (one dead kept), so sb1 is free; sb2 holds a-4');
  t.same(plan([pod], { maxPerPodContainer: -1 }).sandboxes, ['u1/sb0'], 'a-3 kept: sb1 stays');
  const dead = rpod('u2', [sb('u2', 1), sb('u2', 0)], []);
  t.same(plan([dead]).sandboxes, ['u2/sb0'], 'the newest dead sandbox of a pod that still exists stays');
  const unlabelled = rpod('u3', [sb('u3', 2, true), sb('u3', 1), sb('u3', 0)], [ctr('u3', 'a', 0, 'exited', { sandboxId: undefined })]);
  t.same(plan([unlabelled]).sandboxes, [], 'a container that does not name its sandbox holds them all');
  const running = rpod('u4', [sb('u4', 1, true), sb('u4', 0, false, { running: true })], []);
  t.same(plan([running]).sandboxes, [], 'a running sandbox that is not ready (no pod network) is active');
});

t.test('evictNonDeletedPods (DeleteAllUnusedContainers): terminated pods lose all their dead containers and sandboxes too', async (t) => {
  const done = rpod('done', [sb('done', 0)], [ctr('done', 'a', 1), ctr('done', 'a', 0)]);
  const live = rpod('live', [sb('live', 0, true)], [ctr('live', 'a', 2, 'running'), ctr('live', 'a', 1), ctr('live', 'a', 0)]);
  const periodic = plan([done, live], {}, { state: state([], ['done']) });
  t.same([periodic.containers, periodic.sandboxes], [['done/a-0', 'live/a-0'], []], 'a periodic run: the policy only');
  const all = plan([done, live], {}, { state: state([], ['done']), evictNonDeletedPods: true });
  t.same(all.containers.sort(), ['done/a-0', 'done/a-1', 'live/a-0']);
  t.same(all.sandboxes, ['done/sb0']);
  const early = plan([done, live], {}, { state: state([], ['done']), evictNonDeletedPods: true, allSourcesReady: false });
  t.same(early.containers.sort(), ['done/a-0', 'live/a-0'], 'containers: only once all sources are ready');
});

t.test('podStateProvider: evicted, deleted with nothing running, terminal, unknown once sources are ready', async (t) => {
  const pods = new Map<string, { deleting: boolean; phase?: string; reason?: string; running?: boolean; ready?: boolean }>([
    ['evicted', { deleting: false, phase: 'Failed', reason: 'Evicted', running: true }],
    ['failed', { deleting: false, phase: 'Failed', reason: 'DeadlineExceeded' }],
    ['failed-ready', { deleting: false, phase: 'Failed', ready: true }],
    ['succeeded', { deleting: false, phase: 'Succeeded' }],
    ['running', { deleting: false, phase: 'Running', running: true }],
    ['stopped', { deleting: false, phase: 'Running' }],
    ['deleting', { deleting: true, phase: 'Running', running: true }],
    ['deleted', { deleting: true, phase: 'Running' }],
    ['deleted-sandbox', { deleting: true, phase: 'Running', ready: true }],
  ]);
  let sourcesReady = false;
  const provider = podStateProvider({
    known: (uid) => pods.get(uid),
    status: (uid) => {
      const p = pods.get(uid);
      return p?.phase ? { phase: p.phase, ...(p.reason ? { reason: p.reason } : {}) } : undefined;
    },
    runtimePod: (uid) => {
      const p = pods.get(uid);
      return p && rpod(uid, [sb(uid, 0, p.ready === true)], [ctr(uid, 'a', 0, p.running ? 'running' : 'exited')]);
    },
    allSourcesReady: () => sourcesReady,
  });
  const answers = () => [...pods.keys(), 'unknown'].filter((uid) => provider.shouldPodContentBeRemoved(uid));
  const runtime = () => [...pods.keys(), 'unknown'].filter((uid) => provider.shouldPodRuntimeBeRemoved(uid));
  t.same(answers(), ['evicted', 'deleted', 'deleted-sandbox']);
  t.same(runtime(), ['failed', 'failed-ready', 'succeeded', 'deleted', 'deleted-sandbox'], 'a sandbox left running does not count');
  sourcesReady = true;
  t.same(answers(), ['evicted', 'deleted', 'deleted-sandbox', 'unknown'], 'a pod no source knows, once every source is ready');
  t.same(runtime(), ['failed', 'failed-ready', 'succeeded', 'deleted', 'deleted-sandbox', 'unknown']);
});

/** A runtime that records removals, fails the ones asked to, and can fail its listing. */
function fakeRuntime(pods: RuntimePod[]) {
  const calls: string[] = [];
  const failing = new Set<string>();
  let listError: string | undefined;
  return {
    calls,
    failing,
    failList: (message: string | undefined) => (listError = message),
    runtime: {
      async removeContainer(id: string) {
        calls.push(id);
        if (failing.has(id)) {
          failing.delete(id);
          throw new Error('device or resource busy');
        }
        for (const p of pods) {
          (p as { containers: readonly RuntimeContainer[] }).containers = p.containers.filter((c) => c.id !== id);
          (p as { sandboxes: readonly RuntimeSandbox[] }).sandboxes = p.sandboxes.filter((s) => s.id !== id);
        }
      },
    },
    pods: async () => {
      if (listError) throw new Error(listError);
      return pods.map((p) => ({ ...p }));
    },
  };
}

const quiet = createLogger({ verbosity: 0, format: 'json' });

t.test('the runner: removes what the plan says, containers then sandboxes; a failed removal is logged and retried at the next run', async (t) => {
  const pods = [rpod('u1', [sb('u1', 1, true), sb('u1', 0)], [ctr('u1', 'a', 2, 'running', { sandboxId: 'u1/sb1' }), ctr('u1', 'a', 1, 'exited', { sandboxId: 'u1/sb1' }), ctr('u1', 'a', 0, 'exited', { sandboxId: 'u1/sb0' })])];
  const fake = fakeRuntime(pods);
  const events: string[] = [];
  const gc = new ContainerGC({ runtime: fake.runtime, policy: DEFAULT_CONTAINER_GC_POLICY, pods: fake.pods, allSourcesReady: () => true, state: state(), warn: (r) => events.push(r), log: quiet, now: () => NOW });
  fake.failing.add('u1/a-0');
  await gc.run();
  t.same(fake.calls, ['u1/a-0'], 'the sandbox a-0 still holds is not removed');
  await gc.run();
  t.same(fake.calls, ['u1/a-0', 'u1/a-0', 'u1/sb0'], 'retried, then its sandbox');
  t.same(pods[0]?.containers.map((c) => c.id), ['u1/a-2', 'u1/a-1']);
  t.same(pods[0]?.sandboxes.map((s) => s.id), ['u1/sb1']);
  t.same(events, [], 'a failed removal is no failed run');
});

t.test('the runner: a run that cannot list the runtime logs, records ContainerGCFailed on the node and never throws; deleteAllUnusedContainers rejects', async (t) => {
  const fake = fakeRuntime([rpod('done', [sb('done', 0)], [ctr('done', 'a', 1), ctr('done', 'a', 0)])]);
  const events: string[] = [];
  const gc = new ContainerGC({ runtime: fake.runtime, policy: DEFAULT_CONTAINER_GC_POLICY, pods: fake.pods, allSourcesReady: () => true, state: state([], ['done']), warn: (r, m) => events.push(`${r}: ${m}`), log: quiet, now: () => NOW });
  fake.failList('Cannot connect to the Docker daemon');
  await t.resolves(gc.run());
  t.same(events, ['ContainerGCFailed: Cannot connect to the Docker daemon']);
  await t.rejects(gc.deleteAllUnusedContainers(), /Cannot connect/);
  fake.failList(undefined);
  await gc.run();
  t.same(fake.calls, ['done/a-0'], 'a periodic run keeps the policy');
  await gc.deleteAllUnusedContainers();
  t.same(fake.calls, ['done/a-0', 'done/a-1', 'done/sb0'], 'DeleteAllUnusedContainers: everything of the terminated pod');
});

t.test('the runner: runs never overlap; start runs at once then every period; stop ends it', async (t) => {
  const fake = fakeRuntime([]);
  let inFlight = 0;
  let most = 0;
  let runs = 0;
  const pods = async () => {
    inFlight++;
    runs++;
    most = Math.max(most, inFlight);
    await new Promise((r) => setTimeout(r, 20));
    inFlight--;
    return fake.pods();
  };
  const gc = new ContainerGC({ runtime: fake.runtime, policy: DEFAULT_CONTAINER_GC_POLICY, pods, allSourcesReady: () => true, state: state(), warn: () => undefined, log: quiet });
  await Promise.all([gc.run(), gc.run(), gc.deleteAllUnusedContainers()]);
  t.equal(most, 1, 'one at a time');
  t.equal(runs, 3);
  gc.start(30);
  const deadline = Date.now() + 5000;
  while (runs < 6 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
  t.ok(runs >= 6, 'periodic runs');
  await gc.stop();
  const after = runs;
  await new Promise((r) => setTimeout(r, 100));
  t.equal(runs, after, 'no run after stop');
  t.throws(() => new ContainerGC({ runtime: fake.runtime, policy: { ...DEFAULT_CONTAINER_GC_POLICY, minAgeMs: -1 }, pods, allSourcesReady: () => true, state: state(), warn: () => undefined, log: quiet }), /invalid minimum garbage collection age/);
});
