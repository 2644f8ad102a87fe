/**
 * Log follow fan-out (up to 200 followers of one chatty container): many `containerLogs?follow=true` readers on one container writing numbered lines,
 * which is then killed: every stream ends, and every stream holds exactly the container's log —
 * no line lost, duplicated or out of order. nodelet runs as a child: its RSS and descriptors.
 */
import http from 'node:http';
import t from 'tap';
import { ChildNode, podManifest } from '../helpers/soak-node.js';
import { figures, mib, peakRss, poll, range, sized, stopwatch } from '../helpers/soak.js';

const FOLLOWERS = sized({ ci: 50, full: 200 });
/** How long the container chats with every follower attached before it is killed. */
const CHAT_MS = sized({ ci: 8000, full: 30_000 });
/**
 * From the kill: every stream has delivered the rest of the log and ended. The followers may lag
 * the container (nodelet's log relay costs CPU per line per follower: 200 followers of 1000
 * lines/s keep two cores busy), so this is the bound on catching up, not on noticing the death.
 */
const END_WITHIN_MS = sized({ ci: 15_000, full: 60_000 });
/** RSS may grow with the readers (buffers per stream), never with the amount of log served. */
const RSS_GROWTH_MAX = 32 * 1024 * 1024 + FOLLOWERS * 2 * 1024 * 1024;

// About 1000 numbered lines a second: 50 lines, then 50 ms.
const chatter = 'i=0; while :; do j=0; while [ $j -lt 50 ]; do echo "line $i"; i=$((i+1)); j=$((j+1)); done; usleep 50000; done';

interface Follower {
  lines: number;
  /** The first line that was not the next expected one. */
  error: string | undefined;
  ended: boolean;
  status: number;
  done: Promise<void>;
}

/** Follows the log over plain HTTP; checks each line is `line <n>` with n = 0, 1, 2… as it arrives. */
function follow(url: string): Follower {
  const f: Follower = { lines: 0, error: undefined, ended: false, status: 0, done: Promise.resolve() };
  f.done = new Promise<void>((resolve) => {
    let partial = '';
    const req = http.get(`${url}?follow=true`, { agent: false }, (res) => {
      f.status = res.statusCode ?? 0;
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        const parts = (partial + chunk).split('\n');
        partial = parts.pop() ?? '';
        for (const line of parts) {
          if (line !== `line ${f.lines}`) f.error ??= `expected "line ${f.lines}", got ${JSON.stringify(line.slice(0, 80))}`;
          f.lines++;
        }
      });
      res.on('end', () => {
        if (partial) f.error ??= `a partial last line ${JSON.stringify(partial.slice(0, 80))}`;
        f.ended = true;
        resolve();
      });
      res.on('error', () => resolve());
    });
    req.on('error', (err) => {
      f.error ??= err.message;
      resolve();
    });
  });
  return f;
}

t.test(`${FOLLOWERS} log followers on a chatty container, then killed`, { timeout: sized({ ci: 180_000, full: 600_000 }) }, async (t) => {
  const node = await ChildNode.start(t);
  await node.writeManifest('chatty.yaml', podManifest('chatty', { talk: ['sh', '-c', chatter] }, { restartPolicy: 'Never' }));
  const { id } = await poll('the chatty container running', () => node.containerOf('chatty', 'talk'), 60_000, 200);
  const url = `${node.url}/containerLogs/default/${node.podName('chatty')}/talk`;
  const fds0 = node.fds();
  const rss0 = node.rss();
  const peak = peakRss(node.pid);
  const elapsed = stopwatch();
  const followers = range(FOLLOWERS).map(() => follow(url));
  await poll(`${FOLLOWERS} followers reading`, (why) => {
    const reading = followers.filter((f) => f.lines > 0).length;
    why(`${reading} reading`);
    return reading === FOLLOWERS ? true : undefined;
  }, 60_000);
  const attachSeconds = elapsed();
  const fdsAttached = node.fds();
  // Let it chat with everyone attached, then kill it: a deadline-free wait on a real condition —
  // the slowest follower has seen CHAT_MS worth of lines (about 1 per ms).
  await poll('the container chatting with everyone attached', () => (Math.min(...followers.map((f) => f.lines)) >= CHAT_MS ? true : undefined), CHAT_MS * 4 + 30_000, 100);
  const killedAt = Date.now();
  const slowestAtKill = Math.min(...followers.map((f) => f.lines));
  await node.docker.getContainer(id).kill();
  await poll('every stream ended', (why) => {
    why(`${followers.filter((f) => !f.ended).length} still open`);
    return followers.every((f) => f.ended || f.error) ? true : undefined;
  }, END_WITHIN_MS, 50);
  const endSeconds = (Date.now() - killedAt) / 1000;
  // The whole log, read once the container is dead.
  const reference = await (await fetch(url)).text();
  const total = reference.split('\n').filter(Boolean).length;
  t.ok(total >= CHAT_MS, `the container wrote ${total} lines`);
  const wrong = followers.filter((f) => f.status !== 200 || f.error !== undefined || f.lines !== total);
  t.same(
    wrong.slice(0, 3).map((f) => ({ status: f.status, lines: f.lines, error: f.error })),
    [],
    `all ${FOLLOWERS} streams ended with all ${total} lines, in order, none twice (${wrong.length} did not)`,
  );
  const rssPeak = peak.stop();
  t.ok(rssPeak - rss0 <= RSS_GROWTH_MAX, `nodelet's RSS grew ${mib(rssPeak - rss0)} MiB (≤ ${mib(RSS_GROWTH_MAX)}: 32 MiB + 2 MiB per follower)`);
  await poll(`nodelet's descriptors back to ${fds0}`, (why) => {
    why(`${node.fds()} open`);
    return node.fds() <= fds0 + 2 ? true : undefined;
  }, 15_000);
  figures(t, {
    followers: FOLLOWERS,
    lines: total,
    mib_served: mib(reference.length * FOLLOWERS),
    attach_seconds: attachSeconds,
    slowest_lag_at_kill_lines: total - slowestAtKill,
    streams_ended_s_after_kill: endSeconds,
    fds_before: fds0,
    fds_attached: fdsAttached,
    fds_after: node.fds(),
    rss_before_mib: mib(rss0),
    rss_peak_mib: mib(rssPeak),
    rss_after_mib: mib(node.rss()),
  });
});
