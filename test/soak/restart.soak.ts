/**
 * nodelet itself under faults (SIGKILLed in the middle of creating a pod; the manifest directory
 * replaced atomically while pods start):
 * - SIGKILL at a Docker event of a pod being created (its sandbox created, started, a container
 *   created…), then a restart: the pod converges with one sandbox and one of each container, and
 *   nothing orphaned or duplicated stays on Docker;
 * - the static pod directory is a symlink swapped atomically to new versions (as a ConfigMap's
 *   atomic writer does) while the previous version's pods are still starting: nodelet ends up
 *   running exactly the last version's pods, each once, the unchanged ones never restarted.
 */
import { mkdir, rename, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import t from 'tap';
import { Label } from '../../src/runtime/docker/labels.js';
import { prng, fuzzSeed } from '../helpers/prng.js';
import { ChildNode, converge, podManifest } from '../helpers/soak-node.js';
import { figures, mib, range, round, sized, stopwatch } from '../helpers/soak.js';

/** Kill points: the 8 create/start events of a 3-container pod, each once (ci) or three times (full), in a seeded order. */
const KILLS = sized({ ci: 8, full: 24 });
const SWAPS = sized({ ci: 3, full: 12 });
const CONVERGE_MS = sized({ ci: 90_000, full: 180_000 });

t.test(`nodelet SIGKILLed ${KILLS}x while creating a pod`, { timeout: sized({ ci: 300_000, full: 1_800_000 }) }, async (t) => {
  const seed = fuzzSeed('NODELET_SOAK_SEED');
  t.comment(`seed ${seed} (replay: NODELET_SOAK_SEED=${seed})`);
  const random = prng(seed);
  const order = range(KILLS).map((i) => ({ k: 1 + (i % 8), r: random() })).sort((a, b) => a.r - b.r).map((x) => x.k);
  const node = await ChildNode.start(t);
  const names: string[] = [];
  const killedAt: string[] = [];
  const converged: number[] = [];
  for (const i of range(KILLS)) {
    const name = `mk${i}`;
    // Kill at the k-th create/start event of this pod: 1 = sandbox created, 2 = sandbox started,
    // 3 = first container created, … up to the last container started.
    const k = order[i]!;
    const events = await node.docker.getEvents({ filters: { type: ['container'], event: ['create', 'start'], label: [`${Label.podName}=${node.podName(name)}`] } });
    let seen = 0;
    const hit = new Promise<string>((resolve) => {
      let buf = '';
      events.on('data', (chunk: Buffer) => {
        buf += chunk.toString();
        for (let nl = buf.indexOf('\n'); nl >= 0; nl = buf.indexOf('\n')) {
          const e = JSON.parse(buf.slice(0, nl)) as { Action: string; Actor: { Attributes: Record<string, string> } };
          buf = buf.slice(nl + 1);
          seen++;
          if (seen === k) resolve(`${e.Action} of ${e.Actor.Attributes[Label.containerName] ?? '?'}`);
        }
      });
    });
    await node.writeManifest(`${name}.yaml`, podManifest(name, { a: ['sleep', '2147483647'], b: ['sleep', '2147483647'], c: ['sleep', '2147483647'] }));
    names.push(name);
    let timer: NodeJS.Timeout | undefined;
    const where = await Promise.race([hit, new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`no ${k}th create/start event of ${name} within 60 s (${seen} seen)`)), 60_000)))]);
    clearTimeout(timer);
    await node.kill('SIGKILL');
    (events as unknown as { destroy(): void }).destroy();
    killedAt.push(where);
    const clock = stopwatch();
    await node.restart();
    converged.push(round(clock() + (await converge(node, names, CONVERGE_MS))));
    t.pass(`kill ${i} at the ${where}: after the restart every pod converged, nothing orphaned or duplicated`);
  }
  figures(t, {
    kills: KILLS,
    seed,
    killed_at: killedAt.join('; '),
    reconverged_s: converged.join('/'),
    last_nodelet_fds: node.fds(),
    last_nodelet_rss_mib: mib(node.rss()),
  });
});

t.test(`manifest dir swapped atomically ${SWAPS * 2}x while pods start`, { timeout: sized({ ci: 300_000, full: 1_800_000 }) }, async (t) => {
  const node = await ChildNode.start(t, { manifestLink: true });
  let version = 0;
  /** A new directory holding `pods` (name → command), then the link renamed over the old one. */
  const publish = async (pods: Record<string, string[]>) => {
    const dir = join(node.workDir, `..v${++version}`);
    await mkdir(dir);
    for (const [name, command] of Object.entries(pods)) await writeFile(join(dir, `${name}.yaml`), podManifest(name, { app: command }));
    const tmp = join(node.workDir, `manifests.tmp${version}`);
    await symlink(dir, tmp);
    await rename(tmp, node.manifestDir);
  };
  const sleep = ['sleep', '2147483647'];
  const changed = ['sh', '-c', 'exec sleep 2147483646'];
  const seconds: number[] = [];
  for (const round_ of range(SWAPS)) {
    // v1: a b c; then at once v2: b (same), c (changed), d; the last one stays.
    await publish({ [`a${round_}`]: sleep, [`b${round_}`]: sleep, [`c${round_}`]: sleep });
    const clock = stopwatch();
    await publish({ [`b${round_}`]: sleep, [`c${round_}`]: changed, [`d${round_}`]: sleep });
    const want = [`b${round_}`, `c${round_}`, `d${round_}`];
    seconds.push(round(clock() + (await converge(node, want, CONVERGE_MS))));
    const pods = await node.pods();
    const restarts = pods.flatMap((p) => p.status?.containerStatuses ?? []).reduce((n, c) => n + (c.restartCount ?? 0), 0);
    t.equal(restarts, 0, `swap ${round_}: exactly ${want.join(' ')} run (a gone, c replaced), none restarted`);
    const c = pods.find((p) => p.metadata?.name === node.podName(`c${round_}`));
    t.same(c?.spec?.containers?.[0]?.command, changed, `swap ${round_}: c runs its new version`);
  }
  figures(t, { swaps: SWAPS * 2, converged_s: seconds.join('/'), fds: node.fds(), rss_mib: mib(node.rss()) });
});
