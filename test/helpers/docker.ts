import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import Docker from 'dockerode';
import { dockerClient } from '../../src/runtime/docker/client.js';

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
