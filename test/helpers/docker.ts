import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { readFile, rm } from 'node:fs/promises';
import { promisify } from 'node:util';
import type Docker from 'dockerode';
import { dockerClient } from '../../src/runtime/docker/client.js';
import { waitFor } from './wait.js';

const run = promisify(execFile);

/** The image scripts/docker-engine.sh builds from Debian's busybox-static. */
export const BUSYBOX = 'nodelet.local/busybox:1.35';

/**
 * The private engine `npm test` started (scripts/test.sh exports DOCKER_HOST). Tests never use
 * the host's engine; without DOCKER_HOST they fail with a pointer to `npm test` instead of skipping.
 */
export function testDockerHost(): string {
  const host = process.env.DOCKER_HOST;
  if (!host) throw new Error('DOCKER_HOST is not set: run integration tests through `npm test`, which starts a private Docker engine');
  return host;
}

export function testDocker(): Docker {
  return dockerClient(testDockerHost());
}

/** Runs the docker CLI against the test engine. */
export async function dockerCLI(...args: string[]): Promise<string> {
  const { stdout } = await run('docker', args, { env: { ...process.env, DOCKER_HOST: testDockerHost() } });
  return stdout;
}

/** Every container (any state) labelled for `node`. */
export async function containersOfNode(docker: Docker, node: string): Promise<Docker.ContainerInfo[]> {
  return docker.listContainers({ all: true, filters: { label: [`io.nodelet.node=${node}`] } });
}

/** Force-removes every container of `node` (test cleanup). */
export async function removeNodeContainers(docker: Docker, node: string): Promise<void> {
  const list = await containersOfNode(docker, node);
  await Promise.all(list.map((c) => docker.getContainer(c.Id).remove({ force: true }).catch(() => undefined)));
}

/**
 * The state directory of the private engine `npm run test:soak` started (scripts/test-soak.sh
 * exports NODELET_DOCKER_STATE_DIR): the soak suite stops and starts that engine as faults.
 */
export function testEngineDir(): string {
  const dir = process.env.NODELET_DOCKER_STATE_DIR;
  if (!dir) throw new Error('NODELET_DOCKER_STATE_DIR is not set: run the soak suite through `npm run test:soak`, which starts a restartable private engine');
  return dir;
}

/**
 * Stops the private test engine as `systemctl stop docker` does (SIGTERM: dockerd stops the
 * containers, then exits) and waits until it is gone; its exec root is unmounted and removed as
 * scripts/docker-engine.sh stop does, since the next start makes a new one.
 */
export async function stopTestEngine(timeoutMs = 90_000): Promise<void> {
  const dir = testEngineDir();
  const pid = Number((await readFile(`${dir}/docker.pid`, 'utf8').catch(() => '')).trim());
  const execRoot = (await readFile(`${dir}/execroot`, 'utf8').catch(() => '')).trim();
  if (pid > 0) {
    process.kill(pid, 'SIGTERM');
    await waitFor(`dockerd ${pid} to exit after SIGTERM`, () => (alive(pid) ? undefined : true), timeoutMs, 100);
  }
  if (execRoot.startsWith('/tmp/nodelet-exec.')) {
    await run('umount', ['-R', execRoot]).catch(() => undefined);
    await rm(execRoot, { recursive: true, force: true });
  }
}

/** Starts the private test engine again on the same state and socket; resolves once it answers. */
export async function startTestEngine(): Promise<void> {
  const script = new URL('../../scripts/docker-engine.sh', import.meta.url).pathname;
  await run(script, ['private', testEngineDir()], { timeout: 120_000 });
}

/** Running and not a zombie (dockerd's parent, the script, has exited: init reaps it later). */
function alive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    return false;
  }
}
