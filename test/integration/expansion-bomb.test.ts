import { monitorEventLoopDelay } from 'node:perf_hooks';
import t from 'tap';
import type { EventList } from '../../src/api/types.js';
import { createLogger } from '../../src/logging/index.js';
import { expansionBombManifest } from '../helpers/hostile.js';
import { startTestNode } from '../helpers/nodelet.js';

/**
 * A `$(VAR)` expansion bomb through a real nodelet and Docker. Twenty-two env
 * entries, `V0` 32 characters and each next `V{i}=$(V{i-1})$(V{i-1})`, used again by `args` and
 * a `subPathExpr`: about 1.5 KB of spec that, expanded, is a 64 Mi-character `V21` (and 128 Mi
 * in the whole env). nodelet must refuse the container cheaply (CreateContainerConfigError with
 * a short message) and stay responsive while the refusal is retried, with its memory, its log,
 * its events and its status all bounded.
 */

const manifest = expansionBombManifest();

// The bounds asserted; the original code exceeded each by orders of magnitude (see the report).
const MAX_MESSAGE_BYTES = 4 * 1024;
const MAX_EVENT_MESSAGE_BYTES = 1024;
const MAX_RSS_GROWTH = 100 * 1024 * 1024;
const MAX_HEALTHZ_MS = 1000;
const MAX_LOG_BYTES = 512 * 1024;
const MAX_LOG_LINE_BYTES = 16 * 1024;

t.test('a $(VAR) expansion bomb is refused cheaply, and nodelet stays bounded and responsive', async (t) => {
  t.ok(Buffer.byteLength(manifest) < 2048, `the spec is small (${Buffer.byteLength(manifest)} bytes)`);
  let logBytes = 0;
  let longestLine = 0;
  const log = createLogger({
    verbosity: 2,
    format: 'json',
    destination: {
      write(line: string) {
        logBytes += Buffer.byteLength(line);
        longestLine = Math.max(longestLine, Buffer.byteLength(line));
      },
    },
  });
  const node = await startTestNode(t, {}, { log });
  // Healthy first (the PLEG's first relist); from then on every answer must be a quick 200.
  await node.waitFor('/healthz ok', async () => ((await fetch(`${node.url}/healthz`)).status === 200 ? true : undefined));
  const rssBefore = process.memoryUsage().rss;
  let rssPeak = rssBefore;
  const sampleRss = () => {
    rssPeak = Math.max(rssPeak, process.memoryUsage().rss);
  };
  // /healthz asked every 100 ms from before the pod arrives to the end (one request in flight at
  // a time): the slowest answer is how long the bomb held nodelet's event loop, which this
  // in-process node shares with the test.
  const latencies: number[] = [];
  let failures = 0;
  let inFlight = false;
  const probe = async () => {
    if (inFlight) return;
    inFlight = true;
    const started = performance.now();
    try {
      const res = await fetch(`${node.url}/healthz`);
      await res.text();
      if (res.status === 200) latencies.push(performance.now() - started);
      else failures++;
    } catch {
      failures++;
    } finally {
      inFlight = false;
    }
  };
  const prober = setInterval(() => {
    sampleRss();
    void probe();
  }, 100);
  t.teardown(() => clearInterval(prober));
  const loopDelay = monitorEventLoopDelay({ resolution: 20 });
  loopDelay.enable();
  t.teardown(() => loopDelay.disable());

  await node.writeManifest('bomb.yaml', manifest);
  const waiting = await node.waitFor('bomb/app waiting with CreateContainerConfigError', async () => {
    const c = (await node.pod('bomb'))?.status?.containerStatuses?.find((s) => s.name === 'app');
    return c?.state?.waiting?.reason === 'CreateContainerConfigError' ? c.state.waiting : undefined;
  }, 60_000);
  const message = waiting.message ?? '';
  t.ok(Buffer.byteLength(message) < MAX_MESSAGE_BYTES, `waiting message is bounded (${Buffer.byteLength(message)} bytes)`);
  // Never hand tap the message itself: before the fix it held 64 Mi characters.
  const head = message.slice(0, 300);
  t.ok(/^env V\d+: \$\(VAR\) expansion would exceed \d+ bytes/.test(head), `the message names the variable and the cap: ${head}`);

  // The refusal is retried after the start back-off (10 s); the window includes that retry.
  const failedCount = async (): Promise<number> => {
    const { status, body } = await node.get<EventList>('/api/v1/events');
    if (status !== 200) throw new Error(`GET /api/v1/events: ${status}`);
    const failed = body.items.find((e) => e.involvedObject.name === `bomb-${node.nodeName}` && e.reason === 'Failed');
    return failed?.count ?? 0;
  };
  const seen = await failedCount();
  await node.waitFor('the refusal retried', async () => ((await failedCount()) > seen ? true : undefined), 60_000);
  clearInterval(prober);
  loopDelay.disable();
  const slowest = Math.max(...latencies);
  t.ok(latencies.length >= 20, `/healthz answered ${latencies.length} times while the bomb was refused and retried`);
  t.equal(failures, 0, '/healthz never failed');
  t.ok(slowest < MAX_HEALTHZ_MS, `/healthz answered within ${MAX_HEALTHZ_MS} ms (slowest ${Math.round(slowest)} ms; event loop delay max ${Math.round(loopDelay.max / 1e6)} ms)`);

  const { status, body } = await node.get<EventList>('/api/v1/events');
  t.equal(status, 200, 'GET /api/v1/events answers');
  const longest = Math.max(...body.items.map((e) => Buffer.byteLength(e.message ?? '')));
  t.ok(longest <= MAX_EVENT_MESSAGE_BYTES, `every event message fits the 1 KiB note limit (longest ${longest} bytes)`);

  sampleRss();
  const growth = rssPeak - rssBefore;
  t.ok(growth < MAX_RSS_GROWTH, `RSS growth stays bounded (${Math.round(growth / 1024 / 1024)} MB)`);
  t.ok(logBytes < MAX_LOG_BYTES, `log output stays bounded (${logBytes} bytes)`);
  t.ok(longestLine < MAX_LOG_LINE_BYTES, `every log line is bounded (longest ${longestLine} bytes)`);
  await node.removeManifest('bomb.yaml');
});
