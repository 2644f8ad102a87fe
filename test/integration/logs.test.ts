import { connect, type Socket } from 'node:net';
import t from 'tap';
import type { Pod } from '../../src/api/types.js';
import { BUSYBOX, dockerCLI } from '../helpers/docker.js';
import { startTestNode, type TestNode } from '../helpers/nodelet.js';

/**
 * Container logs against real Docker through an in-process nodelet: every query parameter, the
 * refusals, `previous` across a restart, `follow` until the container stops, and a TTY container.
 */

// `app` writes 20 numbered lines to each stream (2 ms apart, so `sinceTime` has distinct times to
// cut between), after a per-instance id so restarts can be told apart.
const numbers = `apiVersion: v1
kind: Pod
metadata: { name: numbers }
spec:
  terminationGracePeriodSeconds: 0
  containers:
    - name: app
      image: ${BUSYBOX}
      imagePullPolicy: Never
      command: ["sh", "-c", "echo boot $(cat /proc/sys/kernel/random/uuid); i=1; while [ $i -le 20 ]; do echo out$i; echo err$i >&2; i=$((i+1)); usleep 2000; done; exec sleep 3600"]
    - name: term
      image: ${BUSYBOX}
      imagePullPolicy: Never
      tty: true
      command: ["sh", "-c", "echo tty1; echo tty2 >&2; exec sleep 3600"]
`;

// Prints a line a second, then exits for good.
const ticker = `apiVersion: v1
kind: Pod
metadata: { name: ticker }
spec:
  restartPolicy: Never
  terminationGracePeriodSeconds: 0
  containers:
    - name: tick
      image: ${BUSYBOX}
      imagePullPolicy: Never
      command: ["sh", "-c", "for i in 1 2 3; do echo tick$i; sleep 1; done"]
`;

// The file's budget: the sum of its caps is well past tap's default 120 s (the followers' case
// alone: 60 s for the log, 180 s for the answers, 20 s for a slot), and a loaded machine uses them.
t.setTimeout(420_000);

const TIMESTAMPED = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{9}Z /;
const lines = (text: string) => text.split('\n').filter((l) => l !== '');

async function runningPod(node: TestNode, name: string): Promise<Pod> {
  return node.waitFor(`${name} running`, async () => {
    const p = await node.pod(name);
    return p?.status?.containerStatuses?.every((c) => c.state?.running) ? p : undefined;
  });
}

t.test('containerLogs against Docker', async (t) => {
  const node = await startTestNode(t);
  await node.writeManifest('numbers.yaml', numbers);
  const pod = (await runningPod(node, 'numbers')).metadata?.name ?? '';
  const base = `${node.url}/containerLogs/default/${pod}/app`;
  const get = async (query = '', url = base) => {
    const res = await fetch(`${url}${query}`);
    return { status: res.status, headers: res.headers, text: await res.text() };
  };
  // The log is complete once err20 is in it.
  const full = await node.waitFor('all lines logged', async () => {
    const r = await get();
    return r.text.includes('err20\n') ? r : undefined;
  });

  t.test('the whole log: both streams, in order, chunked text/plain', async (t) => {
    t.equal(full.status, 200);
    t.equal(full.headers.get('content-type'), 'text/plain');
    t.equal(full.headers.get('transfer-encoding'), 'chunked');
    const all = lines(full.text);
    t.equal(all.length, 41);
    t.equal(all.filter((l) => /^boot [0-9a-f-]{36}$/.test(l)).length, 1);
    t.same(all.filter((l) => l.startsWith('out')), Array.from({ length: 20 }, (_, i) => `out${i + 1}`));
    t.same(all.filter((l) => l.startsWith('err')), Array.from({ length: 20 }, (_, i) => `err${i + 1}`));
  });

  t.test('stream selects one stream', async (t) => {
    t.same(lines((await get('?stream=Stderr')).text), Array.from({ length: 20 }, (_, i) => `err${i + 1}`));
    const out = lines((await get('?stream=Stdout')).text);
    t.equal(out.length, 21);
    t.match(out[0], /^boot /);
    t.notOk(out.some((l) => l.startsWith('err')));
  });

  t.test('timestamps: nine fractional digits, then the line', async (t) => {
    const stamped = lines((await get('?timestamps=true')).text);
    t.equal(stamped.length, 41);
    t.ok(stamped.every((l) => TIMESTAMPED.test(l)), stamped.find((l) => !TIMESTAMPED.test(l)) ?? 'all stamped');
    t.same(stamped.map((l) => l.slice(31)), lines(full.text));
  });

  t.test('tailLines, legacy tail, limitBytes', async (t) => {
    t.same(lines((await get('?tailLines=5')).text), lines(full.text).slice(-5));
    t.same(lines((await get('?tail=3')).text), lines(full.text).slice(-3));
    t.equal((await get('?tail=all')).text, full.text);
    t.equal((await get('?tailLines=0')).text, '');
    const limited = await get('?limitBytes=100');
    t.equal(Buffer.byteLength(limited.text), 100);
    t.equal(limited.text, full.text.slice(0, 100));
    const stampedTail = lines((await get('?tailLines=2&timestamps=1')).text);
    t.equal(stampedTail.length, 2);
    t.ok(stampedTail.every((l) => TIMESTAMPED.test(l)));
  });

  t.test('sinceSeconds and sinceTime filter by the line times', async (t) => {
    t.equal((await get('?sinceSeconds=3600')).text, full.text);
    const stamped = lines((await get('?timestamps=true')).text);
    // The two streams are logged by separate copiers, so times are not sorted across them.
    const sinceTime = stamped.map((l) => l.slice(0, 30)).sort()[20] ?? '';
    const expected = stamped.filter((l) => l.slice(0, 30) >= sinceTime.slice(0, 23)).map((l) => l.slice(31));
    const since = lines((await get(`?sinceTime=${encodeURIComponent(sinceTime)}`)).text);
    // Podman stamps whole seconds (runtime/docker/engine.ts): every line of that second is kept.
    const wholeSeconds = node.nodelet.runtime.currentEngine?.quirks.logTimestampsWholeSeconds === true;
    if (wholeSeconds) t.ok(since.length > 0, `${since.length} lines at or after ${sinceTime}`);
    else t.ok(since.length > 0 && since.length < 41, `${since.length} lines at or after ${sinceTime}`);
    t.same(since, expected, wholeSeconds ? 'exact to the second' : 'exact to the millisecond');
    const later = lines((await get(`?sinceTime=${encodeURIComponent(sinceTime.slice(0, 19) + '.999Z')}`)).text);
    t.same(later, wholeSeconds ? expected : stamped.filter((l) => l.slice(0, 30) >= sinceTime.slice(0, 19) + '.999').map((l) => l.slice(31)), 'later in the same second');
    await new Promise((r) => setTimeout(r, wholeSeconds ? 2500 : 1500));
    t.equal((await get('?sinceSeconds=1')).text, '', 'nothing was written in the last second');
  });

  t.test('refusals: 400, 422, 404, 405', async (t) => {
    const cases: [string, number][] = [
      ['?sinceTime=yesterday', 400],
      ['?tailLines=abc', 400],
      ['?tailLines=1e30', 400],
      ['?limitBytes=-', 400],
      ['?sinceSeconds=5&sinceTime=2026-01-01T00:00:00Z', 422],
      ['?tailLines=-1', 422],
      ['?tail=-1', 422],
      ['?limitBytes=0', 422],
      ['?sinceSeconds=0', 422],
      ['?stream=Stdout&tailLines=1', 422],
      ['?previous=true', 400],
    ];
    for (const [query, code] of cases) {
      const r = await get(query);
      t.equal(r.status, code, query);
      t.equal(r.headers.get('content-type'), 'application/json');
    }
    t.equal((await get('', `${node.url}/containerLogs/default/nopod/app`)).status, 404);
    t.match((await get('', `${node.url}/containerLogs/default/nopod/app`)).text, /pod \\"nopod\\" does not exist/);
    t.equal((await get('', `${node.url}/containerLogs/default/${pod}/nope`)).status, 404);
    t.match((await get('?previous=true')).text, /previous terminated container \\"app\\"/);
    t.equal((await fetch(base, { method: 'POST' })).status, 405);
  });

  t.test('apiserver path: container defaulting and names', async (t) => {
    const api = `${node.url}/api/v1/namespaces/default/pods/${pod}/log`;
    t.equal((await get('?container=app', api)).text, full.text);
    const noContainer = await get('', api);
    t.equal(noContainer.status, 400);
    t.match(noContainer.text, /a container name must be specified for pod .*, choose one of: \[app term\]/);
    t.equal((await get('?container=app', `${node.url}/api/v1/namespaces/default/pods/nopod/log`)).status, 404);
  });

  t.test('a TTY container: one stream, CRLF line ends, stamped the same way', async (t) => {
    const tty = `${node.url}/containerLogs/default/${pod}/term`;
    const text = await node.waitFor('tty lines', async () => {
      const r = await get('', tty);
      return r.text.includes('tty2') ? r.text : undefined;
    });
    t.equal(text, 'tty1\r\ntty2\r\n');
    const stamped = (await get('?timestamps=true', tty)).text.split('\r\n').filter(Boolean);
    t.equal(stamped.length, 2);
    t.ok(stamped.every((l) => TIMESTAMPED.test(l)));
    t.equal((await get('?stream=Stderr', tty)).text, '', 'a TTY has no separate stderr');
  });

  t.test('previous: the instance a docker kill replaced', async (t) => {
    const bootOf = (text: string) => /^boot (\S+)$/m.exec(text)?.[1];
    const oldBoot = bootOf(full.text);
    const id = (await node.pod('numbers'))?.status?.containerStatuses?.find((c) => c.name === 'app')?.containerID?.replace('docker://', '') ?? '';
    await dockerCLI('kill', id);
    await node.waitFor('app restarted', async () => {
      const c = (await node.pod('numbers'))?.status?.containerStatuses?.find((s) => s.name === 'app');
      return c?.restartCount === 1 && c.state?.running ? true : undefined;
    }, 30_000);
    const current = await node.waitFor('new instance logged', async () => {
      const r = await get();
      return r.text.includes('err20\n') ? r.text : undefined;
    });
    t.not(bootOf(current), oldBoot, 'the current log is the new instance');
    const previous = await get('?previous=true');
    t.equal(previous.status, 200);
    t.equal(bootOf(previous.text), oldBoot, 'previous is the killed instance');
    t.equal(previous.text, full.text);
  });
});

t.test('follow streams lines as written and ends when the container stops', async (t) => {
  const node = await startTestNode(t);
  await node.writeManifest('ticker.yaml', ticker);
  const pod = (await runningPod(node, 'ticker')).metadata?.name ?? '';
  const started = Date.now();
  const res = await fetch(`${node.url}/containerLogs/default/${pod}/tick?follow=true&timestamps=true`);
  t.equal(res.status, 200);
  const reader = res.body?.getReader();
  if (!reader) throw new Error('no body');
  const arrivals: { at: number; text: string }[] = [];
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    arrivals.push({ at: Date.now() - started, text: Buffer.from(value).toString() });
  }
  const ended = Date.now() - started;
  const text = arrivals.map((a) => a.text).join('');
  t.same(lines(text).map((l) => l.slice(31)), ['tick1', 'tick2', 'tick3']);
  t.ok(lines(text).every((l) => TIMESTAMPED.test(l)));
  const tick3 = arrivals.find((a) => a.text.includes('tick3'));
  const firstAt = arrivals[0]?.at ?? Infinity;
  t.ok(tick3 && tick3.at - firstAt >= 1000, `lines arrived as written (first at ${firstAt} ms, tick3 at ${tick3?.at} ms)`);
  t.ok(ended < 15_000, `the response ended when the container stopped (${ended} ms)`);
  const status = await node.waitFor('terminated', async () => (await node.pod('ticker'))?.status?.containerStatuses?.[0]?.state?.terminated);
  t.equal(status.exitCode, 0);
  // Stopped now: a follow reads what there is and ends at once.
  const again = await fetch(`${node.url}/containerLogs/default/${pod}/tick?follow=true`);
  t.equal(await again.text(), 'tick1\ntick2\ntick3\n');
});

// 30 MB of 100-byte lines, then quiet: followers start with a long catch-up read.
const chatty = `apiVersion: v1
kind: Pod
metadata: { name: chatty }
spec:
  terminationGracePeriodSeconds: 0
  containers:
    - name: c
      image: ${BUSYBOX}
      imagePullPolicy: Never
      command: ["sh", "-c", "yes $(printf '%099d' 0) | head -c 30000000; echo written; exec sleep 3600"]
`;

// A follower's status line waits for its first log bytes (src/server/plugins/logs.ts), and the
// engine starts 400 reads of a 30 MB json-file log at once: on a quiet machine all are answered in
// seconds, next to two busy loops on 2 cores it took over a minute. The old unbounded wait then
// hung the file into tap's 120 s timeout (the subtest "ended" unfinished). This caps the wait for
// the last answer; a follower not answered by then (or closed unanswered) fails the check.
const FOLLOWERS_ANSWERED_MS = 180_000;

t.test('400 idle followers of a large log: /healthz keeps answering; beyond --max-container-log-streams, 429', async (t) => {
  const node = await startTestNode(t, { maxContainerLogStreams: 400 });
  await node.writeManifest('chatty.yaml', chatty);
  const pod = (await runningPod(node, 'chatty')).metadata?.name ?? '';
  const path = `/containerLogs/default/${pod}/c`;
  await node.waitFor('the log written', async () => ((await (await fetch(`${node.url}${path}?tailLines=1`)).text()).includes('written') ? true : undefined), 60_000);
  const healthz = async () => {
    const start = performance.now();
    const res = await fetch(`${node.url}/healthz`);
    await res.text();
    return { status: res.status, ms: performance.now() - start };
  };
  // What /healthz takes on this machine right now without followers (a loaded machine's
  // scheduling delays show here as well): the liveness bound below is on top of it.
  const idle: number[] = [];
  for (let i = 0; i < 10; i++) idle.push((await healthz()).ms);
  const idleMax = Math.max(...idle);
  const bound = 3000 + idleMax;
  const { hostname, port } = new URL(node.url);
  // Clients that send the request, read the status line and then never read again.
  const followers: Socket[] = [];
  t.teardown(() => followers.forEach((s) => s.destroy()));
  const answered: Promise<string>[] = [];
  for (let i = 0; i < 400; i++) {
    const s = connect(Number(port), hostname);
    s.on('error', () => undefined);
    answered.push(
      new Promise((resolve) => {
        s.once('data', (d: Buffer) => {
          s.pause();
          resolve(d.toString('latin1', 0, 12));
        });
        // A follower that is closed unanswered fails the check below instead of hanging the test.
        s.once('close', () => resolve('closed unanswered'));
      }),
    );
    s.write(`GET ${path}?follow=true HTTP/1.1\r\nHost: x\r\n\r\n`);
    followers.push(s);
  }
  const samples: number[] = [];
  // The load window: at least 8 s, and until every follower has its answer (their catch-up reads
  // start then), however late a loaded machine gets to them.
  let allAnswered = false;
  let answeredAfter: number | undefined;
  const connected = Date.now();
  void Promise.all(answered).then(() => {
    allAnswered = true;
    answeredAfter = Date.now() - connected;
  });
  const until = Date.now() + 8000;
  const answersCap = Date.now() + FOLLOWERS_ANSWERED_MS;
  while (Date.now() < until || (!allAnswered && Date.now() < answersCap)) {
    const h = await healthz();
    if (h.status !== 200) t.fail(`/healthz answered ${h.status}`);
    samples.push(h.ms);
    // Pacing of the probe over the 8 s load window (a sampler, not synchronisation).
    await new Promise((r) => setTimeout(r, 150));
  }
  const sorted = [...samples].sort((a, b) => a - b);
  const p = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? 0;
  // A liveness bound, not a speed target (those live in `npm run bench` and the soak suite):
  // before log work yielded to other requests, single answers took up to 3.3 s here on a quiet
  // machine (where the idle maximum is a few ms).
  t.comment(`/healthz under 400 followers: p50 ${p(0.5).toFixed(0)} ms, p90 ${p(0.9).toFixed(0)} ms, max ${p(1).toFixed(0)} ms (${samples.length} samples); idle max ${idleMax.toFixed(0)} ms; all answered after ${answeredAfter === undefined ? '-' : (answeredAfter / 1000).toFixed(1)} s`);
  t.ok(p(1) < bound, `every /healthz answered within 3 s of the idle maximum (max ${p(1).toFixed(0)} ms, bound ${bound.toFixed(0)} ms)`);
  t.ok(allAnswered, `every follower answered within ${FOLLOWERS_ANSWERED_MS / 1000} s`);
  const heads = allAnswered ? await Promise.all(answered) : [];
  const odd = [...new Set(heads.filter((h) => h !== 'HTTP/1.1 200'))];
  t.ok(allAnswered && odd.length === 0, `every follower got its 200${odd.length ? ` (others: ${odd.join(', ')})` : ''}`);
  const refused = await fetch(`${node.url}${path}?follow=true`);
  t.equal(refused.status, 429, 'the 401st');
  t.equal(refused.headers.get('retry-after'), '10');
  t.match(await refused.json(), { kind: 'Status', reason: 'TooManyRequests', message: 'too many container log streams in flight (limit 400); retry later' });
  followers.splice(0).forEach((s) => s.destroy());
  await node.waitFor('a slot again', async () => {
    const res = await fetch(`${node.url}${path}?tailLines=1`);
    await res.text();
    return res.status === 200 ? true : undefined;
  });
});
