import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import t from 'tap';
import { BUSYBOX } from '../helpers/docker.js';
import { startTestNode } from '../helpers/nodelet.js';

/**
 * Image GC on a private engine of its own (the suite's engine holds every test file's images):
 * with the high threshold below the disk's real usage, a run removes every unused image at least
 * `imageMinimumGCAge` old — each tag of it — and keeps the images this node's containers use, the
 * pinned sandbox image, and an image another client's (exited) container uses; it cannot reach the
 * low threshold, so `FreeDiskSpaceFailed` says by how much, then `ImageGCFailed` on the next
 * failure in a row; `kubelet_image_garbage_collected_total{reason="space"}` counts the removals.
 * A minimum age longer than the images' removes nothing.
 */
t.setTimeout(240_000);
const run = promisify(execFile);
const script = join(import.meta.dirname, '..', '..', 'scripts', 'docker-engine.sh');

const dir = await mkdtemp(join(tmpdir(), 'nodelet-gc-engine-'));
const host = (await run(script, ['private', dir], { env: process.env })).stdout.trim();
t.teardown(async () => {
  await run(script, ['stop', dir]).catch(() => undefined);
  await rm(dir, { recursive: true, force: true });
});
const env = { ...process.env, DOCKER_HOST: host };
await run(script, ['images'], { env });
const docker = async (...args: string[]) => (await run('docker', args, { env, maxBuffer: 16 << 20 })).stdout.trim();

/** A one-file image of its own ID (docker import of a tar holding `name`). */
async function tinyImage(name: string, ...moreTags: string[]): Promise<string> {
  const work = await mkdtemp(join(tmpdir(), 'gc-img-'));
  await writeFile(join(work, 'content'), `${name}\n`.repeat(1000));
  await run('tar', ['-C', work, '-cf', join(work, 'img.tar'), 'content']);
  await docker('import', join(work, 'img.tar'), name);
  for (const tag of moreTags) await docker('tag', name, tag);
  await rm(work, { recursive: true, force: true });
  return docker('image', 'inspect', '--format', '{{.Id}}', name);
}

const images = async () => (await docker('images', '--format', '{{.Repository}}:{{.Tag}}')).split('\n').filter(Boolean).sort();

t.test('over the high threshold: unused images go, in-use, pinned and others\' images stay; the failure to reach the low threshold is reported', async (t) => {
  await tinyImage('nodelet.local/gc-unused:1');
  await tinyImage('nodelet.local/gc-two-tags:1', 'nodelet.local/gc-two-tags:2');
  await tinyImage('nodelet.local/gc-other-client:1');
  // Another client of the engine: an exited container, not this node's, uses this image.
  await docker('create', '--name', 'other-client', 'nodelet.local/gc-other-client:1', '/nope');
  const before = await images();

  // A minimum age longer than the images' lives: nothing may go.
  const patient = await startTestNode(t, { dockerEndpoint: host, imageGCHighThresholdPercent: 1, imageGCLowThresholdPercent: 0, imageMinimumGCAgeMs: 3600_000 }, { imageGCPeriodMs: 300 });
  await patient.waitFor('a GC run that found nothing old enough', async () => {
    const events = (await patient.get<{ items: { reason?: string; message?: string }[] }>('/api/v1/events')).body.items;
    return events.find((e) => e.reason === 'FreeDiskSpaceFailed' && /only found 0 bytes eligible to free/.test(e.message ?? ''));
  }, 30_000);
  t.same(await images(), before, 'imageMinimumGCAge: every image kept');
  await patient.stop();

  // 30 s of minimum age (the kubelet's default is 2 min): the pod's image is in use long before
  // any image seen at the first run may go, as the default protects a pod about to start.
  const node = await startTestNode(t, { dockerEndpoint: host, imageGCHighThresholdPercent: 1, imageGCLowThresholdPercent: 0, imageMinimumGCAgeMs: 30_000 }, { imageGCPeriodMs: 500 });
  await node.writeManifest('user.yaml', `apiVersion: v1
kind: Pod
metadata: { name: user }
spec:
  terminationGracePeriodSeconds: 0
  containers:
    - { name: c, image: ${BUSYBOX}, imagePullPolicy: Never, command: ["sleep", "3600"] }
`);
  await node.waitFor('the pod running', async () => (await node.pod('user'))?.status?.containerStatuses?.[0]?.state?.running, 25_000);
  const metrics = await node.waitFor('two images collected for space', async () => {
    const text = await (await fetch(`${node.url}/metrics`)).text();
    return /^kubelet_image_garbage_collected_total\{reason="space"\} 2$/m.test(text) ? text : undefined;
  }, 90_000);
  t.notMatch(metrics, /reason="age"/, 'none for age (imageMaximumGCAge off)');
  t.same(await images(), [BUSYBOX, 'nodelet.local/gc-other-client:1', 'registry.k8s.io/pause:3.10'].sort(), 'left: the pod\'s image, the sandbox image, the other client\'s; gone: the unused one and both tags of the other');
  const events = (await node.get<{ items: { reason?: string; message?: string; involvedObject?: { kind?: string } }[] }>('/api/v1/events')).body.items;
  const failed = events.find((e) => e.reason === 'ImageGCFailed');
  t.match(failed?.message, /^Failed to garbage collect required amount of images\. Attempted to free \d+ bytes, but only found \d+ bytes eligible to free\.$/, 'ImageGCFailed (failures in a row), in the kubelet\'s words');
  t.equal(failed?.involvedObject?.kind, 'Node', 'on the node');
  t.ok(events.some((e) => e.reason === 'FreeDiskSpaceFailed'), 'and FreeDiskSpaceFailed at each run');
  t.equal(await docker('ps', '-a', '--filter', 'name=other-client', '--format', '{{.Names}}'), 'other-client', 'the other client\'s container untouched');
});
