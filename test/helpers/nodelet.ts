import { Cgroupfs } from '../../src/cgroups/cgroupfs.js';
import { cgroupRootPath } from '../../src/cgroups/manager.js';
import { mkdtemp, readFile, rm, writeFile, unlink } from 'node:fs/promises';
import { execFile } from 'node:child_process';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { buildConfig, type Config } from '../../src/config/index.js';
import { createLogger, type Logger } from '../../src/logging/index.js';
import { startNodelet, type Nodelet, type StartOptions } from '../../src/nodelet.js';
import type { Pod, PodList } from '../../src/api/types.js';
import { removeNodeContainers, testDocker, testDockerHost } from './docker.js';
import { waitFor } from './wait.js';

export interface TestNode {
  nodelet: Nodelet;
  nodeName: string;
  manifestDir: string;
  url: string;
  /** Writes a manifest file into the static pod directory. */
  writeManifest(file: string, text: string): Promise<void>;
  removeManifest(file: string): Promise<void>;
  /** GET a JSON document from the API. */
  get<T>(path: string): Promise<{ status: number; body: T }>;
  /** Polls until `check` returns a value (not undefined), or fails after `timeoutMs`. */
  waitFor<T>(what: string, check: () => Promise<T | undefined> | T | undefined, timeoutMs?: number): Promise<T>;
  /** The pod named `name` (with the node suffix) from /pods, if present. */
  pod(name: string, namespace?: string): Promise<Pod | undefined>;
  /** Stops nodelet (containers keep running). */
  stop(): Promise<void>;
  /** Starts a new nodelet on the same node name and directory (adoption after restart). */
  restart(): Promise<void>;
}

interface Teardown {
  teardown(fn: () => Promise<void> | void): void;
}

/**
 * Starts an in-process nodelet against the private test engine, with its own node name (so
 * parallel test files never adopt each other's containers), a temp manifest directory, and a
 * random loopback port. Everything is removed at teardown.
 */
export async function startTestNode(
  t: Teardown,
  overrides: Partial<Config> = {},
  start: Pick<StartOptions, 'streaming' | 'clusterTiming' | 'networkGCPeriodMs' | 'imageGCPeriodMs' | 'evictionMonitoringPeriodMs' | 'statsPeriodMs' | 'diskStatsPeriodMs' | 'certificateTiming'> & { log?: Logger } = {},
): Promise<TestNode> {
  const nodeName = overrides.nodeName ?? `n${randomBytes(4).toString('hex')}`;
  const manifestDir = await mkdtemp(join(tmpdir(), 'nodelet-manifests-'));
  // The real config builder's defaults, in the loopback development posture (anonymous +
  // AlwaysAllow, plain HTTP) as it resolves `--insecure-dev`; then what a test node changes.
  const built = buildConfig(['--insecure-dev', '--address=127.0.0.1'], {}, { hostname: nodeName, interfaces: {} });
  if ('help' in built) throw new Error('buildConfig answered with help');
  const config: Config = Object.freeze({
    ...built.config,
    port: 0,
    staticPodPath: manifestDir,
    fileCheckFrequencyMs: 1000,
    syncFrequencyMs: 10_000,
    nodeName,
    nodeIP: '127.0.0.1',
    dockerEndpoint: testDockerHost(),
    rootDir: manifestDir,
    certDir: join(manifestDir, 'pki'),
    verbosity: Number(process.env.NODELET_TEST_V ?? 0),
    loggingFormat: 'json' as const,
    cniConfDir: join(manifestDir, 'cni-conf'),
    cniCacheDir: join(manifestDir, 'cni-cache'),
    execDisconnectGracePeriodMs: 1000,
    // Each test node's pod cgroups under a root of its own, removed with it.
    cgroupRoot: `/nodelet-test/${nodeName}`,
    // Off in tests: the engine's images are shared by every test file (the image GC test has its own engine).
    imageGCHighThresholdPercent: 100,
    // Off in tests: every test file shares the machine's disk and memory (the eviction tests set their own).
    evictionHard: {},
    ...overrides,
  });
  // A test that reads nodelet's log passes its own (createLogger with a destination); others log to stderr.
  const { log = createLogger({ verbosity: config.verbosity, format: 'json' }), ...timing } = start;
  const opts: StartOptions = { log, relistPeriodMs: 500, crashLoopBackoffMs: { initialMs: 2000, maxMs: 4000 }, ...timing };
  // A start that fails (a test of bad settings) leaves no directory behind: no teardown is registered yet.
  let nodelet = await startNodelet(config, opts).catch(async (err: unknown) => {
    await rm(manifestDir, { recursive: true, force: true });
    throw err;
  });
  const docker = testDocker();

  const node: TestNode = {
    get nodelet() {
      return nodelet;
    },
    nodeName,
    manifestDir,
    get url() {
      return nodelet.url;
    },
    writeManifest: (file, text) => writeFile(join(manifestDir, file), text),
    removeManifest: (file) => unlink(join(manifestDir, file)),
    async get<T>(path: string) {
      const res = await fetch(nodelet.url + path);
      const text = await res.text();
      let body: unknown = text;
      try {
        body = JSON.parse(text);
      } catch {
        /* plain text */
      }
      return { status: res.status, body: body as T };
    },
    waitFor: (what, check, timeoutMs = 20_000) => waitFor(what, check, timeoutMs),

    async pod(name, namespace = 'default') {
      const { body } = await node.get<PodList>('/pods');
      return body.items.find((p) => p.metadata?.name === `${name}-${nodeName}` && p.metadata?.namespace === namespace);
    },
    async stop() {
      await nodelet.close();
    },
    async restart() {
      nodelet = await startNodelet(config, opts);
    },
  };
  t.teardown(async () => {
    await nodelet.close().catch(() => undefined);
    await removeNodeContainers(docker, nodeName);
    await removeCgroupRoot(config.cgroupRoot);
    // Pods keep their volumes when nodelet stops (as with a kubelet): tmpfs volumes are still
    // mounted under the root dir and must go before it can.
    await unmountUnder(manifestDir);
    await rm(manifestDir, { recursive: true, force: true });
  });
  return node;
}

/** Removes a test node's cgroup root and what is below it (its containers are gone by then). */
export async function removeCgroupRoot(root: string): Promise<void> {
  if (root === '/') return;
  const fs = await Cgroupfs.open().catch(() => undefined);
  await fs?.remove(cgroupRootPath(root)).catch(() => undefined);
}

/** Unmounts every mount point below `dir` (deepest first), as a pod's volume teardown would. */
export async function unmountUnder(dir: string): Promise<void> {
  const mounts = (await readFile('/proc/self/mounts', 'utf8'))
    .split('\n')
    .map((line) => line.split(' ')[1]?.replace(/\\040/g, ' ') ?? '')
    .filter((target) => target.startsWith(`${dir}/`))
    .sort((a, b) => b.length - a.length);
  for (const target of mounts) {
    await new Promise<void>((resolve) => execFile('umount', ['-l', target], () => resolve()));
  }
}
