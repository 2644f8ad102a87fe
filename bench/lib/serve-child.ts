/**
 * A child process serving nodelet's HTTP read path, for the `/pods` / `/podInfo` figures.
 *
 *   node serve-child.js nodelet <template-pod.json> <N>
 *     nodelet's real `buildServer` over its real `KubeletHost`, `PodManager` and `StatusManager`
 *     holding N copies of a template pod (taken from the live bench nodelet: real spec, real
 *     status). Only the runtime, kubelet and stats behind the host are stubs: `/pods` and
 *     `/podInfo` never reach them (they are served from the pod manager and the status cache).
 *   node serve-child.js bare <pods-body> <podinfo-body>
 *     A bare Fastify server answering `/pods` and `/podInfo` with those exact bytes (Buffers, the
 *     same content type): the ceiling nodelet is compared with.
 *
 * Prints `PORT <n>` on stdout once listening on 127.0.0.1. Ends on SIGTERM.
 */
import { readFileSync } from 'node:fs';
import Fastify from 'fastify';
import { pino } from 'pino';
import type { Pod, PodStatus } from '../../src/api/types.js';
import { EventRecorder } from '../../src/events/recorder.js';
import { KubeletHost } from '../../src/kubelet/host.js';
import { PodManager } from '../../src/pod/manager.js';
import { buildServer } from '../../src/server/index.js';
import { StatusManager } from '../../src/status/manager.js';

export function clonePods(template: Pod, n: number): Pod[] {
  const pods: Pod[] = [];
  for (let i = 0; i < n; i++) {
    const p = structuredClone(template);
    const name = `bench-${String(i).padStart(4, '0')}`;
    p.metadata = { ...p.metadata, name, namespace: 'default', uid: `00000000-0000-4000-8000-${String(i).padStart(12, '0')}` };
    delete (p.metadata as { annotations?: unknown }).annotations;
    pods.push(p);
  }
  return pods;
}

async function main(): Promise<void> {
  const [mode, a, b] = process.argv.slice(2);
  let app;
  if (mode === 'nodelet') {
    const template = JSON.parse(readFileSync(a!, 'utf8')) as Pod;
    const pods = clonePods(template, Number(b));
    const podManager = new PodManager();
    const statusManager = new StatusManager();
    podManager.setPods(pods.map((p) => ({ ...p, status: undefined }) as Pod));
    for (const p of pods) statusManager.setPodStatus(p, (p.status ?? {}) as PodStatus);
    const unused = new Proxy({}, { get: () => () => { throw new Error('not used by /pods or /podInfo'); } });
    const host = new KubeletHost({
      nodeName: 'bench',
      podManager,
      statusManager,
      runtime: unused as never,
      recorder: new EventRecorder({ nodeName: 'bench' }),
      kubelet: unused as never,
    });
    app = buildServer({ host, logger: pino({ level: 'silent' }), version: { gitVersion: 'v0.0.0-bench' } });
  } else if (mode === 'bare') {
    const pods = readFileSync(a!);
    const podInfo = readFileSync(b!);
    app = Fastify({ logger: false });
    app.get('/pods', (_req, reply) => void reply.type('application/json').send(pods));
    app.get('/podInfo', (_req, reply) => void reply.type('application/json').send(podInfo));
  } else {
    throw new Error(`unknown mode ${mode}`);
  }
  await app.listen({ host: '127.0.0.1', port: 0 });
  const addr = app.server.address();
  process.stdout.write(`PORT ${typeof addr === 'object' && addr ? addr.port : 0}\n`);
  process.on('SIGTERM', () => void app.close().finally(() => process.exit(0)));
}

main().catch((err: unknown) => {
  process.stderr.write(`serve-child: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
});
