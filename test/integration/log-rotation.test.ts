import { readdir, stat } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import t from 'tap';
import type { Pod } from '../../src/api/types.js';
import { BUSYBOX, dockerCLI } from '../helpers/docker.js';
import { startTestNode } from '../helpers/nodelet.js';

/**
 * `containerLogMaxSize` / `containerLogMaxFiles` on the real engine: a container that writes 50 MiB
 * under `--container-log-max-size 1Mi --container-log-max-files 3` keeps at most 3 MiB of log files
 * on disk (the engine rotated them), and `logs` still answers with the newest lines, in order.
 * Following across a rotation is the engine's (README, "Logs and rotation": Docker 20.10 loses
 * and repeats lines there). Docker only: Podman's compatibility API has no `max-file`.
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

  // Written by a process beside sleep into the container's stdout (PID 1's).
  const script = `awk 'BEGIN { for (i = 1; i <= ${LINES}; i++) printf "%08d ${PAD}\\n", i }' > /proc/1/fd/1`;
  await dockerCLI('exec', id, 'sh', '-c', script);
  const name = pod.metadata?.name ?? '';
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
