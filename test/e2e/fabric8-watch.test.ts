import { execFile, spawn } from 'node:child_process';
import type { IncomingMessage } from 'node:http';
import { createInterface } from 'node:readline';
import { promisify } from 'node:util';
import t, { type Test } from 'tap';
import { dockerCLI } from '../helpers/docker.js';
import { startTestNode, type TestNode } from '../helpers/nodelet.js';
import { podManifest } from '../helpers/pod-manifest.js';

/**
 * fabric8 kubernetes-client 8.0.0 (Java) sees a container restart through a plain pod watch and
 * through a shared informer (list, then watch), against a real nodelet, on three HTTP back-ends:
 * Vert.x 4 and JDK (set explicitly, on the `main` class path), and the one fabric8 picks itself
 * when none is set (on the `vertx5` class path: kubernetes-client with its default dependencies,
 * which must pick Vert.x 5), i.e. what an 8.x user gets. test/jvm-client/FabricWatch.java prints
 * each event as a JSON line, and a `docker kill` behind nodelet's back must come out as an event
 * whose restart count went up, and every watch must have been a WebSocket one (fabric8 opens no
 * other kind).
 * The jars come from `scripts/jvm-client.sh build` (CI runs it); without them this test fails.
 */

const run = promisify(execFile);
const SCRIPT = new URL('../../scripts/jvm-client.sh', import.meta.url).pathname;
const PROGRAM = new URL('../jvm-client/FabricWatch.java', import.meta.url).pathname;
/**
 * FabricWatch's --http-client, the class path (`scripts/jvm-client.sh lib [vertx5]`) it runs on,
 * and the package of the class the client's HttpClient must have.
 */
const HTTP_CLIENTS = [
  { httpClient: 'vertx', classPath: 'main', pkg: 'io.fabric8.kubernetes.client.vertx' },
  { httpClient: 'jdk', classPath: 'main', pkg: 'io.fabric8.kubernetes.client.jdkhttp' },
  // No factory set: fabric8's own choice, which for 8.x with its default dependencies is Vert.x 5.
  { httpClient: 'default', classPath: 'vertx5', pkg: 'io.fabric8.kubernetes.client.vertx5' },
] as const;
const CLASS_PATHS = ['main', 'vertx5'] as const;
const MODES = ['watch', 'informer'] as const;
/** A JVM's start, the informer's list, a restart within nodelet's test back-off (2 s, then 4 s). */
const EVENT_TIMEOUT_MS = 60_000;

// Six JVMs one after another, each waiting for a restart.
t.setTimeout(360_000);

const manifest = podManifest('restarter', { app: ['sleep', '3600'] });

/** One line FabricWatch printed. */
interface Line {
  ready?: string;
  httpClient?: string;
  error?: string;
  source?: string;
  type?: string;
  name?: string;
  restartCount?: number;
}

interface Client {
  lines: Line[];
  /** Resolves with the first line (already printed or still to come) that `pred` accepts. */
  waitLine(what: string, pred: (line: Line) => boolean, timeoutMs?: number): Promise<Line>;
  /** Ends stdin (FabricWatch's signal to close the client) and resolves with the exit code. */
  close(): Promise<number | string>;
}

/** Starts FabricWatch on `lib`'s jars; the child is killed at teardown if it is still running. */
function startClient(t: Test, lib: string, url: string, httpClient: string, mode: string): Client {
  const child = spawn('java', ['-cp', `${lib}/*`, PROGRAM, '--master', url, '--namespace', 'default', '--http-client', httpClient, '--mode', mode], {
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  t.teardown(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  });
  const lines: Line[] = [];
  const raw: string[] = [];
  let stderr = '';
  let exit: number | string | undefined;
  const waiters = new Set<() => void>();
  const wake = () => [...waiters].forEach((w) => w());
  const exited = new Promise<number | string>((resolve) => {
    child.once('close', (code, signal) => {
      exit = code ?? signal ?? 'unknown';
      wake();
      resolve(exit);
    });
  });
  child.once('error', (err) => {
    stderr += `spawn java: ${err.message}\n`;
  });
  child.stderr.setEncoding('utf8').on('data', (s: string) => (stderr += s));
  createInterface({ input: child.stdout }).on('line', (text) => {
    raw.push(text);
    try {
      lines.push(JSON.parse(text) as Line);
    } catch {
      lines.push({ error: `not a JSON line: ${text}` });
    }
    wake();
  });
  const context = () => `\n--- stdout:\n${raw.join('\n')}\n--- stderr (last 4 KiB):\n${stderr.slice(-4096)}`;

  return {
    lines,
    waitLine(what, pred, timeoutMs = EVENT_TIMEOUT_MS) {
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => finish(new Error(`${httpClient}/${mode}: no ${what} after ${timeoutMs} ms${context()}`)), timeoutMs);
        const finish = (result: Line | Error) => {
          clearTimeout(timer);
          waiters.delete(check);
          if (result instanceof Error) reject(result);
          else resolve(result);
        };
        const check = () => {
          const hit = lines.find(pred);
          if (hit) finish(hit);
          else if (exit !== undefined) finish(new Error(`${httpClient}/${mode}: exited (${exit}) before ${what}${context()}`));
        };
        waiters.add(check);
        check();
      });
    },
    async close() {
      child.stdin.end();
      const timer = setTimeout(() => child.kill('SIGKILL'), 20_000);
      try {
        return await exited;
      } finally {
        clearTimeout(timer);
      }
    },
  };
}

/** The pod's app container, once it runs again after `minRestarts` restarts: its ID and count. */
async function running(node: TestNode, minRestarts: number): Promise<{ name: string; id: string; restartCount: number }> {
  return node.waitFor(`restarter running with ≥ ${minRestarts} restarts`, async () => {
    const pod = await node.pod('restarter');
    const c = pod?.status?.containerStatuses?.find((s) => s.name === 'app');
    if (!c?.state?.running || !c.containerID || c.restartCount < minRestarts) return undefined;
    return { name: pod?.metadata?.name ?? '', id: c.containerID.replace(/^docker:\/\//, ''), restartCount: c.restartCount };
  }, 30_000);
}

/**
 * The watch requests nodelet's server receives from now on, as `websocket <url>` (an Upgrade, named
 * by its Upgrade header) or `http <url>`: listeners beside nodelet's own that only read the URL.
 */
function recordWatches(node: TestNode): string[] {
  const seen: string[] = [];
  const note = (req: IncomingMessage, transport: string) => {
    if (/[?&]watch=(true|1)(&|$)/.test(req.url ?? '')) seen.push(`${transport} ${req.url}`);
  };
  node.nodelet.app.server.on('request', (req: IncomingMessage) => note(req, 'http'));
  node.nodelet.app.server.on('upgrade', (req: IncomingMessage) => note(req, String(req.headers.upgrade).toLowerCase()));
  return seen;
}

t.test('fabric8 kubernetes-client watch and informer see a container restart (Vert.x 4, JDK and default Vert.x 5 HTTP)', async (t) => {
  const libs = new Map<string, string>();
  for (const classPath of CLASS_PATHS) {
    try {
      libs.set(classPath, (await run(SCRIPT, classPath === 'main' ? ['lib'] : ['lib', classPath])).stdout.trim());
    } catch (err) {
      const stderr = (err as { stderr?: string }).stderr?.trim();
      t.fail(`the fabric8 jars (${classPath}) are missing (CI resolves them with \`scripts/jvm-client.sh build\`): ${stderr || String(err)}`);
      return;
    }
  }

  const node = await startTestNode(t);
  await node.writeManifest('restarter.yaml', manifest);
  const watches = recordWatches(node);
  let seen = 0;
  for (const { httpClient, classPath, pkg } of HTTP_CLIENTS) {
    for (const mode of MODES) {
      await t.test(`${httpClient} ${mode} (${classPath} class path)`, async (t) => {
        const before = await running(node, seen);
        watches.length = 0;
        const client = startClient(t, libs.get(classPath) ?? '', node.url, httpClient, mode);
        const ready = await client.waitLine('ready line', (l) => l.ready !== undefined || l.error !== undefined);
        t.same(Object.keys(ready).sort(), ['httpClient', 'ready'], 'a ready line, no error', { ready });
        t.equal(ready.ready, mode, `ready (${mode === 'watch' ? 'watch() returned' : 'the informer synced'})`);
        t.equal(ready.httpClient?.replace(/\.[^.]*$/, ''), pkg, `the client's HttpClient, ${ready.httpClient}, is from ${pkg}`);

        await dockerCLI('kill', before.id);
        const restart = await client.waitLine(
          `event for ${before.name} with restartCount > ${before.restartCount}`,
          (l) => l.name === before.name && (l.restartCount ?? 0) > before.restartCount,
        );
        t.match(restart, { source: mode, type: 'MODIFIED', name: before.name }, `the restart, as the ${mode} reported it`);
        seen = restart.restartCount ?? seen;

        t.ok(watches.length > 0 && watches.every((w) => w.startsWith('websocket ')), 'watched over WebSocket', { watches });
        t.equal(await client.close(), 0, 'exits 0 when stdin ends');
        t.same(client.lines.filter((l) => l.error !== undefined), [], 'no error line');
        t.ok(client.lines.every((l) => l.ready !== undefined || l.source === mode), `every event came from the ${mode}`);
      });
    }
  }
});
