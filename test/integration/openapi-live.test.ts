import { request, type IncomingHttpHeaders } from 'node:http';
import fc from 'fast-check';
import t from 'tap';
import { startTestNode, type TestNode } from '../helpers/nodelet.js';
import { podManifest } from '../helpers/pod-manifest.js';
import { loadSpec, operations, ResponseValidator, type Operation, type Parameter } from '../helpers/openapi.js';
import { fuzzSeed } from '../helpers/prng.js';

/**
 * Every operation openapi.yaml documents, sent with generated parameters (fast-check, seeded) to
 * a live nodelet on the real engine with a running pod. Each answer must be one the operation
 * documents — its status among the operation's responses (so no 5xx but the documented ones),
 * its media type among the documented ones, its JSON body valid against the documented schema —
 * and must come: a socket that neither answers nor streams within 20 s fails. Answers that
 * stream (watches, followed logs, upgrades) are held to their headers and first lines.
 * FUZZ_SEED replays a run; a failure prints the request as it was sent.
 */

const SEED = fuzzSeed();
const RUNS = Number(process.env.OPENAPI_RUNS ?? 40);
const spec = loadSpec();
const validator = new ResponseValidator(spec);

interface Sent {
  method: string;
  path: string;
  headers: Record<string, string>;
}
interface Answer {
  status: number;
  headers: IncomingHttpHeaders;
  body: string;
  /** Cut off while still streaming (a watch or a followed log), or upgraded. */
  streamed: boolean;
  /** A followed log that had written nothing yet, so no status line either (see send). */
  quiet?: boolean;
}

/** Go's strconv.ParseBool truth, as the server reads `watch`, `follow`. */
const truthy = (v: string | undefined) => v !== undefined && ['1', 't', 'T', 'TRUE', 'true', 'True'].includes(v);

interface Streams {
  /** A watch or a followed log: a 200 is a stream, sampled for a moment. */
  mayStream: boolean;
  /**
   * A followed log: its status line waits for the log's first byte, as the kubelet's
   * flush-writer does (pkg/kubelet/server/server.go getContainerLogs), so a follow of a log
   * with nothing left to show (a sinceTime in the future) may not answer at all yet.
   */
  follow: boolean;
}

function send(base: URL, req: Sent, streams: Streams): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const deadline = setTimeout(
      () => {
        r.destroy();
        if (streams.follow) resolve({ status: 0, headers: {}, body: '', streamed: true, quiet: true });
        else reject(new Error(`no answer within 20 s: ${describe(req)}`));
      },
      streams.follow ? 5_000 : 20_000,
    );
    const done = (a: Answer) => {
      clearTimeout(deadline);
      resolve(a);
    };
    const r = request({ host: base.hostname, port: base.port, path: req.path, method: req.method, headers: req.headers, agent: false });
    r.on('upgrade', (res, socket) => {
      socket.destroy();
      done({ status: res.statusCode ?? 0, headers: res.headers, body: '', streamed: true });
    });
    r.on('response', (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => {
        body += c;
        if (body.length > 8 << 20) res.destroy(new Error('body over 8 MiB'));
      });
      res.on('end', () => done({ status: res.statusCode ?? 0, headers: res.headers, body, streamed: false }));
      res.on('error', (err) => {
        clearTimeout(deadline);
        reject(err);
      });
      if (streams.mayStream && res.statusCode === 200) {
        // A stream ends when the watch or the container does: a moment of it is the sample.
        setTimeout(() => {
          res.removeAllListeners('end');
          r.destroy();
          done({ status: 200, headers: res.headers, body, streamed: true });
        }, 300);
      }
    });
    r.on('error', (err) => {
      clearTimeout(deadline);
      reject(new Error(`${err.message}: ${describe(req)}`));
    });
    r.end();
  });
}

function describe(req: Sent): string {
  const h = Object.entries(req.headers).map(([k, v]) => ` -H '${k}: ${v}'`).join('');
  return `curl -X ${req.method}${h} '${req.path}'`;
}

/** What the running pod and the node are called, for parameters that should hit something. */
interface Known {
  node: string;
  pod: string;
  uid: string;
  resourceVersion: string;
}

const hostile = ['..', '.', '%', 'a/b', 'a\\b', 'a\u0000b', 'Web', 'a..b', '-x', 'x'.repeat(64), 'y'.repeat(254), 'é', '?x=1', '#'];
const anyText = fc.string({ unit: 'grapheme', minLength: 1, maxLength: 24 });
const pathValue = (known: string[]) => fc.oneof({ weight: 8, arbitrary: fc.constantFrom(...known) }, fc.constantFrom(...hostile), anyText);

function pathArb(name: string, k: Known): fc.Arbitrary<string> {
  switch (name) {
    case 'ns':
      return pathValue(['default', 'default', 'kube-system', 'nosuch']);
    case 'name':
      return pathValue([k.pod, k.pod, k.node, 'nosuch']);
    case 'container':
      return pathValue(['app', 'app', 'nosuch']);
    case 'uid':
      return pathValue([k.uid, k.uid, 'uid-nosuch']);
    case 'check':
      return pathValue(['ping', 'log', 'syncloop', 'nosuch']);
    default:
      return pathValue(['x']);
  }
}

/** Commands drawn only from harmless ones: the generated request really runs them. */
const command = fc.constantFrom('true', 'ls', 'echo', 'no-such-binary', '/', 'sh');

function queryArb(p: Parameter, k: Known): fc.Arbitrary<string | string[]> {
  const schema = p.schema ?? {};
  switch (p.name) {
    case 'command':
    case 'cmd':
      return p.schema?.type === 'array' ? fc.array(command, { minLength: 0, maxLength: 3 }) : command;
    case 'resourceVersion':
      return fc.oneof(
        fc.constantFrom('', '0', '1', k.resourceVersion, '99999999999999999', '18446744073709551615', '18446744073709551616', '-1', 'abc', '1e3', ' 1'),
        fc.bigInt({ min: 0n, max: (1n << 64n) - 1n }).map(String),
      );
    case 'labelSelector':
      return fc.oneof(fc.constantFrom('', 'a=b', 'a in (x,y)', '!a', 'a!=b', '==', 'a=b,', 'x'.repeat(70) + '=1'), anyText);
    case 'fieldSelector':
      return fc.oneof(
        fc.constantFrom('', `spec.nodeName=${k.node}`, 'metadata.name=x', 'metadata.namespace!=default', 'status.phase=Running', 'involvedObject.name=x', 'bogus=1', '='),
        anyText,
      );
    case 'sinceTime':
      return fc.oneof(fc.constantFrom('2020-01-01T00:00:00Z', '2999-01-01T00:00:00Z', 'yesterday'), fc.date({ noInvalidDate: true }).map((d) => d.toISOString()));
    case 'timeoutSeconds':
      return fc.constantFrom('1', '0', '2', '-1', 'x', '99999999999999999999');
    case 'port':
    case 'ports':
      return fc.array(fc.oneof(fc.integer({ min: -1, max: 70000 }).map(String), fc.constantFrom('80,81', 'http', '')), { maxLength: 2 });
  }
  if (schema.enum) return fc.oneof({ weight: 3, arbitrary: fc.constantFrom(...schema.enum.map(String)) }, anyText);
  switch (schema.type) {
    case 'boolean':
      return fc.oneof(fc.constantFrom('true', 'false', '1', '0', '', 'True'), anyText);
    case 'integer':
      return fc.oneof({ weight: 3, arbitrary: fc.integer({ min: -3, max: 100 }).map(String) }, fc.constantFrom('', 'x', '1.5', '99999999999999999999'));
    case 'array':
      return fc.array(anyText, { maxLength: 3 });
    default:
      return p.name === 'watch' ? fc.constantFrom('true', '1', 'false', '0', '', 'yes') : fc.oneof(fc.constantFrom('true', '', 'x'), anyText);
  }
}

const accepts = [
  'application/json',
  'application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json',
  'application/vnd.kubernetes.protobuf,application/json',
  '*/*',
  'text/html',
];

/** The kinds of upgrade a client may ask a streaming operation or a watch for. */
const websocket = (protocols?: string): Record<string, string> => ({
  connection: 'Upgrade',
  upgrade: 'websocket',
  'sec-websocket-version': '13',
  'sec-websocket-key': 'dGhlIHNhbXBsZSBub25jZQ==',
  ...(protocols === undefined ? {} : { 'sec-websocket-protocol': protocols }),
});
const spdy = (protocol: string): Record<string, string> => ({ connection: 'Upgrade', upgrade: 'SPDY/3.1', 'x-stream-protocol-version': protocol });
const anyUpgrade = [websocket('v5.channel.k8s.io, v4.channel.k8s.io'), websocket(), websocket('portforward.k8s.io'), websocket(','), spdy('v4.channel.k8s.io'), spdy('portforward.k8s.io'), spdy('nope')];

interface Draft {
  method: string;
  path: string[];
  query: Array<[string, string]>;
  headers: Record<string, string>;
}

type Family = 'watchable' | 'exec' | 'attach' | 'portforward' | 'log' | 'other';
function familyOf(op: Operation): Family {
  if (op.responses.has('101')) {
    if (/exec/.test(op.path)) return 'exec';
    if (/attach/.test(op.path)) return 'attach';
    if (/port[fF]orward/.test(op.path)) return 'portforward';
    return 'watchable';
  }
  return /containerLogs|\/log$/.test(op.path) ? 'log' : 'other';
}

/**
 * A request a well-behaved client would send: the running pod's names, values of the right
 * shape, the upgrade the operation speaks. These reach the success paths (200, 101, streams).
 */
function wellFormed(op: Operation, k: Known): fc.Arbitrary<Draft> {
  const family = familyOf(op);
  const kubeletPath = !op.path.startsWith('/api');
  const path = fc.tuple(
    ...op.parameters
      .filter((p) => p.in === 'path')
      .map((p) => fc.constant(({ ns: 'default', container: 'app', uid: k.uid, check: 'ping' } as Record<string, string>)[p.name] ?? (/nodes/.test(op.path) ? k.node : k.pod))),
  );
  const value = (p: Parameter): fc.Arbitrary<string | null> => {
    const pick = (...xs: string[]) => fc.option(fc.constantFrom(...xs), { freq: 3 });
    switch (p.name) {
      case 'command': return fc.constantFrom('true', 'ls');
      case 'cmd': return fc.constantFrom('true', 'echo hi', 'ls /');
      case 'stdout': case 'output': return fc.constant(kubeletPath ? '1' : 'true');
      case 'stdin': case 'stderr': case 'input': case 'error': return pick(kubeletPath ? '1' : 'true', kubeletPath ? '0' : 'false');
      case 'tty': return fc.constant(kubeletPath ? '0' : 'false');
      case 'container': return fc.constant('app');
      case 'port': case 'ports': return fc.constant('8080');
      case 'watch': return pick('true', 'false');
      case 'timeoutSeconds': return fc.constant('1');
      case 'resourceVersion': return pick('', '0', k.resourceVersion);
      case 'resourceVersionMatch': case 'sendInitialEvents': return fc.constant(null);
      case 'allowWatchBookmarks': return pick('true', 'false');
      case 'labelSelector': return pick('', 'a=b', '!a');
      case 'fieldSelector':
        if (/events/.test(op.path)) return pick('involvedObject.name=x', `involvedObject.namespace=default`);
        if (/\/nodes/.test(op.path) && !/metrics/.test(op.path)) return pick(`metadata.name=${k.node}`);
        if (/namespaces$/.test(op.path)) return pick('metadata.name=default', 'status.phase=Active');
        if (/metrics/.test(op.path)) return fc.constant(null);
        return pick(`spec.nodeName=${k.node}`, 'status.phase=Running', `metadata.name=${k.pod}`);
      case 'limit': return pick('10', '500');
      case 'follow': return pick('true', 'false');
      case 'previous': return fc.constant(null);
      case 'timestamps': return pick('true', 'false');
      case 'sinceSeconds': return pick('10', '3600');
      // One of sinceSeconds and sinceTime, and tailLines only with every stream (else 422).
      case 'sinceTime': return fc.constant(null);
      case 'tailLines': return pick('0', '5');
      case 'tail': return pick('5', 'all');
      case 'limitBytes': return pick('1', '100');
      case 'stream': return pick('All');
      case 'gracePeriodSeconds': return pick('0', '30');
      case 'dryRun': return fc.constant('All');
      case 'podID': return fc.constant(k.pod);
      case 'podNamespace': return fc.constant('default');
      case 'verbose': return pick('');
      case 'exclude': return pick('log', 'nosuch');
      case 'only_cpu_and_memory': return pick('true', 'false');
      default: return fc.constant(null);
    }
  };
  const query = op.parameters.filter((p) => p.in === 'query');
  const upgrade =
    family === 'exec' || family === 'attach'
      ? fc.constantFrom<Record<string, string> & { method?: string }>(
          { ...websocket('v5.channel.k8s.io, v4.channel.k8s.io'), method: 'GET' },
          { ...spdy('v4.channel.k8s.io'), method: op.method },
        )
      : family === 'portforward'
        ? fc.constantFrom<Record<string, string> & { method?: string }>({ ...websocket('portforward.k8s.io'), method: 'GET' }, { ...spdy('portforward.k8s.io'), method: op.method })
        : family === 'watchable'
          ? fc.option(fc.constant<Record<string, string> & { method?: string }>({ ...websocket(), method: 'GET' }), { freq: 2 })
          : fc.constant(null);
  return fc.record({ path, query: fc.tuple(...query.map(value)), upgrade, accept: fc.constantFrom(...accepts.slice(0, 2)) }).map(({ path, query: qv, upgrade, accept }) => {
    const { method = op.method, ...headers } = upgrade ?? {};
    const entries = query.flatMap((p, i): Array<[string, string]> => (qv[i] === null || qv[i] === undefined ? [] : [[p.name, qv[i]]]));
    // A WebSocket watch must be a watch.
    if (upgrade && family === 'watchable') entries.push(['watch', 'true'], ['timeoutSeconds', '1']);
    return { method: op.method === 'DELETE' ? 'DELETE' : method, path, query: entries, headers: { ...headers, accept } };
  });
}

/** A request anybody might send: hostile names, values of any shape, any upgrade, extra keys. */
function anything(op: Operation, k: Known): fc.Arbitrary<Draft> {
  const path = op.parameters.filter((p) => p.in === 'path');
  const query = op.parameters.filter((p) => p.in === 'query');
  return fc
    .record({
      path: fc.tuple(...path.map((p) => pathArb(p.name, k))),
      query: fc.tuple(...query.map((p) => fc.option(queryArb(p, k), { freq: 2 }))),
      extra: fc.option(fc.tuple(fc.constantFrom('pretty', 'bogus', 'watch', 'dryRun'), anyText), { freq: 5 }),
      accept: fc.option(fc.constantFrom(...accepts), { freq: 2 }),
      upgrade: op.responses.has('101') ? fc.option(fc.constantFrom(...anyUpgrade), { freq: 1 }) : fc.constant(null),
      head: op.method === 'GET' ? fc.boolean() : fc.constant(false),
    })
    .map(({ path: pv, query: qv, extra, accept, upgrade, head }) => {
      const entries = query.flatMap((p, i): Array<[string, string]> => {
        const v = qv[i];
        return v === null || v === undefined ? [] : [v].flat().map((one): [string, string] => [p.name, one]);
      });
      if (extra) entries.push(extra);
      const headers: Record<string, string> = { ...(upgrade ?? {}) };
      if (accept) headers.accept = accept;
      return { method: head && !upgrade ? 'HEAD' : op.method, path: pv, query: entries, headers };
    });
}

function requestArb(op: Operation, k: Known): fc.Arbitrary<Sent & Streams> {
  const names = op.parameters.filter((p) => p.in === 'path').map((p) => p.name);
  return fc.oneof(wellFormed(op, k), anything(op, k)).map((d) => {
    let url = op.path;
    names.forEach((name, i) => (url = url.replace(`{${name}}`, encodeURIComponent(d.path[i] ?? ''))));
    const params = new URLSearchParams(d.query);
    // Deleting the running pod is a real deletion (it comes back from its manifest): only as a dry run.
    if (op.method === 'DELETE' && d.path.includes(k.pod)) params.set('dryRun', 'All');
    const qs = params.toString();
    return { method: d.method, path: qs ? `${url}?${qs}` : url, headers: d.headers, mayStream: anyTrue(params, 'watch') || anyTrue(params, 'follow'), follow: anyTrue(params, 'follow') };
  });
}

/** Whether any value of `key` is true (the server reads the first; the extra may add a second). */
function anyTrue(params: URLSearchParams, key: string): boolean {
  return params.getAll(key).some(truthy);
}

/** Everything wrong with `answer` as an answer to `op`; empty when it is one the document gives. */
function violations(op: Operation, sent: Sent, answer: Answer): string[] {
  const problems: string[] = [];
  const documented = op.responses.get(String(answer.status)) ?? op.responses.get('default');
  if (!documented) return [`status ${answer.status} is not documented for ${op.method} ${op.path} (documented: ${[...op.responses.keys()].join(', ')})`];
  if (answer.status === 101 || sent.method === 'HEAD' || !documented.content) return problems;
  const media = String(answer.headers['content-type'] ?? '').split(';')[0]?.trim() ?? '';
  const content = documented.content[media];
  if (!content) {
    problems.push(`${answer.status} with Content-Type ${media || '(none)'}; documented: ${Object.keys(documented.content).join(', ')}`);
    return problems;
  }
  if (media !== 'application/json' || content.schema === undefined) return problems;
  if (answer.streamed) {
    // A watch: each complete line is a watch event.
    for (const line of answer.body.split('\n').slice(0, -1)) {
      const event = parseJSON(line) as { type?: unknown; object?: unknown } | undefined;
      if (!event || !['ADDED', 'MODIFIED', 'DELETED', 'BOOKMARK', 'ERROR'].includes(String(event.type)) || typeof event.object !== 'object') {
        problems.push(`watch line is not an event: ${line.slice(0, 200)}`);
      }
    }
    return problems;
  }
  const body = parseJSON(answer.body);
  if (body === undefined) return [`${answer.status} body is not JSON: ${answer.body.slice(0, 200)}`];
  const invalid = validator.check(content.schema, body);
  if (invalid) problems.push(`${answer.status} body does not match its schema: ${invalid}: ${answer.body.slice(0, 300)}`);
  return problems;
}

function parseJSON(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

/** A container that logs a line a second, so a followed log always has something to send. */
const manifest = podManifest('fuzz', { app: ['sh', '-c', 'while true; do echo tick; sleep 1; done'] });

async function knownNames(node: TestNode): Promise<Known> {
  const p = await node.waitFor('fuzz pod running', async () => {
    const p = await node.pod('fuzz');
    return p?.status?.containerStatuses?.every((c) => c.state?.running) ? p : undefined;
  }, 60_000);
  // The metrics API answers once the background sampler has seen the pod and the node.
  await node.waitFor('metrics sampled', async () => {
    const [pod, self] = await Promise.all([
      node.get(`/apis/metrics.k8s.io/v1beta1/namespaces/default/pods/${p.metadata?.name ?? ''}`),
      node.get(`/apis/metrics.k8s.io/v1beta1/nodes/${node.nodeName}`),
    ]);
    return pod.status === 200 && self.status === 200 ? true : undefined;
  }, 60_000);
  const list = await node.get<{ metadata: { resourceVersion: string } }>('/api/v1/pods');
  return { node: node.nodeName, pod: p.metadata?.name ?? '', uid: p.metadata?.uid ?? '', resourceVersion: list.body.metadata.resourceVersion };
}

t.test('every documented operation answers as openapi.yaml says (seeded property run)', async (t) => {
  t.comment(`seed ${SEED}, ${RUNS} runs per operation (replay with FUZZ_SEED=${SEED})`);
  const node = await startTestNode(t);
  await node.writeManifest('fuzz.yaml', manifest);
  const known = await knownNames(node);
  const base = new URL(node.url);
  const ops = operations(spec);
  t.ok(ops.length >= 50, `${ops.length} operations`);
  const statuses = new Map<string, Set<number>>();
  let sent = 0;

  for (const [index, op] of ops.entries()) {
    const seen = new Set<number>();
    statuses.set(`${op.method} ${op.path}`, seen);
    let failure: string | undefined;
    await fc.assert(
      fc.asyncProperty(requestArb(op, known), async (req) => {
        let answer: Answer;
        try {
          answer = await send(base, req, req);
        } catch (err) {
          failure = String(err);
          return false;
        }
        sent++;
        if (answer.quiet) return true;
        seen.add(answer.status);
        const problems = violations(op, req, answer);
        if (problems.length > 0) {
          failure = `${describe(req)}\n  ${problems.join('\n  ')}`;
          return false;
        }
        return true;
      }),
      { seed: SEED + index, numRuns: RUNS, endOnFailure: true },
    ).catch(() => undefined);
    t.equal(failure, undefined, `${op.method} ${op.path}`, { failure });
  }

  t.comment(`${sent} requests; statuses seen: ${[...statuses].map(([k, v]) => `${k} ${[...v].sort().join('/')}`).join('; ')}`);
  // The run must have exercised more than the error paths, and the node must still be whole.
  const neverSucceeded = [...statuses].filter(([, s]) => ![...s].some((c) => c < 300)).map(([k]) => k);
  t.same(neverSucceeded, [], 'every operation answered 1xx/2xx at least once');
  const health = await node.get<string>('/healthz');
  t.equal(health.status, 200, 'healthz after the run');
  const after = await node.pod('fuzz');
  t.equal(after?.metadata?.uid, known.uid, 'the pod was not deleted');
  t.ok(after?.status?.containerStatuses?.every((c) => c.state?.running), 'the pod still runs');
});
