/**
 * The bench's sealed-netns parts (`cni`, `podnet`; `kubelet`: bench/lib/vs-kubelet.ts), run by
 * `sealedParts` (pod-network.ts) as `nsenter --net=/run/netns/<name> -- node netns-child.js` with the job in NODELET_BENCH_NETNS_JOB.
 * It refuses to run anywhere but inside that namespace. There it starts a private engine of its
 * own (scripts/docker-engine.sh private + images; dockerd inherits the namespace, so its
 * containers' sandboxes and the CNI plugins nodelet runs live in it), runs the parts, writes
 * their results to the job's `out` file and stops everything it started, also on failure and on
 * SIGINT/SIGTERM. The namespace itself is the parent's to delete.
 */
import { writeFileSync } from 'node:fs';
import { dockerClient } from '../../src/runtime/docker/client.js';
import { runsInsideNetns } from '../../test/helpers/netns.js';
import { nodeBaseImage } from '../../test/helpers/node-base-image.js';
import { cleanupsOnExit } from './cleanups.js';
import { repoRoot } from '../../test/helpers/repo-root.js';
import { Engine } from './env.js';
import { JOB_ENV, NETNS_ENV, NETNS_PARTS, runPodNetworkParts, type SealedJob, type SealedResult } from './pod-network.js';
import type { PartResult } from './report.js';
import { vsKubeletPart } from './vs-kubelet.js';

const log = (msg: string): void => void process.stderr.write(`bench: ${msg}\n`);

async function main(): Promise<void> {
  const name = process.env[NETNS_ENV] ?? '';
  if (!name || !runsInsideNetns(name)) throw new Error(`not inside the sealed network namespace ${JSON.stringify(name)}: refusing to create pod IPs here`);
  const job = JSON.parse(process.env[JOB_ENV] ?? '') as SealedJob;
  const root = repoRoot();

  const cleanups = cleanupsOnExit(log, "stopping the sealed netns's nodelets and engine");

  try {
    const engine = await Engine.start(root, log, (dir) =>
      cleanups.push(async () => {
        log('stopping the sealed netns\'s Docker engine');
        await Engine.stopDir(root, dir);
      }),
    );
    const docker = await engine.version();
    const parts: PartResult[] = [];
    if (job.parts.some((p) => (NETNS_PARTS as readonly string[]).includes(p))) {
      const pn = await runPodNetworkParts({
        root,
        job,
        dockerHost: engine.host,
        docker: dockerClient(engine.host),
        // test/helpers/docker.ts's CLI wrapper (which nodeBaseImage uses) reads DOCKER_HOST.
        nodeImage: () => {
          process.env.DOCKER_HOST = engine.host;
          return nodeBaseImage();
        },
        log,
        defer: (fn) => void cleanups.push(fn),
      });
      parts.push(...pn);
    }
    if (job.kubelet) {
      parts.push(
        await vsKubeletPart({
          root,
          job: job.kubelet,
          cli: job.cli,
          keepLogs: job.keepLogs,
          engine,
          docker: dockerClient(engine.host),
          log,
          defer: (fn) => void cleanups.push(fn),
        }),
      );
    }
    const result: SealedResult = { parts, docker, netns: name };
    writeFileSync(job.out, JSON.stringify(result));
  } finally {
    await cleanups.run();
  }
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    process.stderr.write(`bench: sealed netns parts FAILED: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exit(1);
  },
);
