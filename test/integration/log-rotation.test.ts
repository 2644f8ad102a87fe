import { readdir, stat } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import t from 'tap';
import type { Pod } from '../../src/api/types.js';
import { BUSYBOX, dockerCLI } from '../helpers/docker.js';
import { startTestNode } from '../helpers/nodelet.js';

/**
 * `containerLogMaxSize` / `containerLogMaxFiles` on the real engine: a container that writes 50 MiB
 * under `--container-log-max-size 1Mi --container-log-max-files 3` keeps at most 3 MiB of log files
 * on disk (the engine rotated them), `logs` still answers with the newest lines, in order, and a
 * `logs -f` begun before the writes sees every line once and in order across the ~50 rotations
 * (nodelet follows the engine's files by inode: Docker 20.10's own follow loses and repeats lines
 * there). Docker only: Podman's compatibility API has no `max-file`.
 */
t.setTimeout(180_000);

const LINES = 500_000;
/** 105 bytes a line: an 8-digit sequence number, a space, 95 bytes of padding, the newline. */
const PAD = 'x'.repeat(95);

const writer = `apiVersion: v1
kind: Pod
metadata: { name: writer }
spec:
  terminationGracePeriodSeconds: 0
  containers:
    - name: c
      image: ${BUSYBOX}
      imagePullPolicy: Never
      command: ["sh", "-c", "echo ready; exec sleep 3600"]
`;

t.test('50 MiB of log under 1Mi x 3: at most 3 MiB on disk, the newest lines still read in order', async (t) => {
  const node = await startTestNode(t, { containerLogMaxSize: '1Mi', containerLogMaxFiles: 3 });
  await node.writeManifest('writer.yaml', writer);
  const pod = await node.waitFor('writer running', async () => {
    const p: Pod | undefined = await node.pod('writer');
    return p?.status?.containerStatuses?.[0]?.state?.running ? p : undefined;
  }, 30_000);
  const id = pod.status?.containerStatuses?.[0]?.containerID?.replace('docker://', '') ?? '';
  const logConfig = JSON.parse(await dockerCLI('inspect', '--format', '{{json .HostConfig.LogConfig}}', id)) as { Type: string; Config: Record<string, string> };
  t.same(logConfig, { Type: 'json-file', Config: { 'max-size': String(1 << 20), 'max-file': '3' } }, 'the container was created with the node\'s rotation');

  // A follow begun before the writes (the kubelet's `logs -f`): it must see every line, across
  // every rotation (in 50 MiB under 1Mi there are about 50), once and in order.
  const name = pod.metadata?.name ?? '';
  const follow = new AbortController();
  const followed = { count: 0, last: 0, gaps: 0, ready: false };
  const response = await fetch(`${node.url}/containerLogs/default/${name}/c?follow=true`, { signal: follow.signal });
  t.equal(response.status, 200);
  // Sequence numbers are read from the bytes as they come (this client shares nodelet's event loop,
  // so it must be cheap: a stalled loop is a follower that falls behind).
  const seenAll = (async () => {
    let line: number[] = [];
    try {
      for await (const chunk of response.body as AsyncIterable<Uint8Array>) {
        let start = 0;
        for (;;) {
          const nl = chunk.indexOf(10, start);
          if (nl === -1) {
            line.push(...chunk.subarray(start, Math.min(chunk.length, start + 8 - Math.min(8, line.length))));
            break;
          }
          const head = line.length > 0 ? Buffer.concat([Buffer.from(line), chunk.subarray(start, nl)]) : Buffer.from(chunk.buffer, chunk.byteOffset + start, nl - start);
          line = [];
          start = nl + 1;
          const text = head.toString('latin1', 0, 8);
          if (text.startsWith('ready')) {
            followed.ready = true;
            continue;
          }
          const n = Number(text);
          if (n !== followed.last + 1) followed.gaps++;
          followed.last = n;
          followed.count++;
          if (n === LINES) return;
        }
      }
    } finally {
      follow.abort();
    }
  })();
  await node.waitFor('the follow has begun', async () => followed.ready || undefined, 10_000);

  // Written by a process beside sleep into the container's stdout (PID 1's).
  // In 500 blocks of 1000 lines (105 kB) with a 10 ms pause after each: about 10 MB/s, a rotation
  // every 0.1 s. (Docker 20.10's own follow lost lines at 6 MiB/s; flat out, the engine writes
  // faster than any follower that shares its client's event loop keeps up with, and a follower
  // holds at most twice the kept files: log-files.ts.)
  const blocks = LINES / 1000;
  const script = `i=0; while [ $i -lt ${blocks} ]; do awk -v b=$i 'BEGIN { for (j = b * 1000 + 1; j <= b * 1000 + 1000; j++) printf "%08d ${PAD}\\n", j }'; usleep 10000; i=$((i + 1)); done > /proc/1/fd/1`;
  await dockerCLI('exec', id, 'sh', '-c', script);
  await seenAll.catch(() => undefined);
  t.same(followed, { count: LINES, last: LINES, gaps: 0, ready: true }, `the follow saw all ${LINES} lines, each once, in order`);
  // The engine writes the log asynchronously: the last line lands shortly after the exec ends.
  const tail = await node.waitFor('the last line in the log', async () => {
    const res = await fetch(`${node.url}/containerLogs/default/${name}/c?tailLines=5`);
    const text = await res.text();
    return text.endsWith(`${String(LINES).padStart(8, '0')} ${PAD}\n`) ? text : undefined;
  }, 30_000);
  t.same(tail.split('\n').slice(0, -1).map((l) => Number(l.slice(0, 8))), [LINES - 4, LINES - 3, LINES - 2, LINES - 1, LINES], 'the newest lines, in order');
  const all = await (await fetch(`${node.url}/containerLogs/default/${name}/c`)).text();
  const numbers = all.split('\n').slice(0, -1).map((l) => Number(l.slice(0, 8)));
  t.ok(numbers.every((n, i) => i === 0 || n === (numbers[i - 1] ?? 0) + 1), 'what the kept files hold is one run of consecutive lines');
  t.ok(numbers.length > 10_000 && numbers.length < 40_000, `only the kept files are read (${numbers.length} lines, about 3 MiB)`);

  const logPath = (await dockerCLI('inspect', '--format', '{{.LogPath}}', id)).trim();
  const files = (await readdir(dirname(logPath))).filter((f) => f.startsWith(basename(logPath)));
  const sizes = await Promise.all(files.map(async (f) => (await stat(join(dirname(logPath), f))).size));
  const total = sizes.reduce((a, b) => a + b, 0);
  t.ok(files.length >= 2 && files.length <= 3, `rotated, at most 3 files kept (${files.join(', ')})`);
  // Each file ends at the first line past 1 MiB: 3 files hold at most 3 MiB and two json lines more.
  t.ok(total <= 3 * 2 ** 20 + 2 * 200, `${total} bytes of log on disk, at most 3 MiB`);
});
