import { open } from 'node:fs/promises';
import { Writable } from 'node:stream';
import type Docker from 'dockerode';
import { Label } from './labels.js';
import { containerLogs } from './logs.js';

/** The kubelet's caps: 4096 bytes from the file; from the log, the last 80 lines, at most 2048 bytes. */
const MAX_FILE_BYTES = 4096;
const FALLBACK_LINES = 80;
const FALLBACK_BYTES = 2048;

/**
 * The termination message of an exited container, as the kubelet reads it: the file mounted at
 * its `terminationMessagePath` (up to 4 KiB), or — with `FallbackToLogsOnError`, a non-zero exit
 * and an empty file — the tail of its log. Undefined when there is none.
 */
export async function readTerminationMessage(docker: Docker, info: Docker.ContainerInspectInfo): Promise<string | undefined> {
  const labels = info.Config.Labels ?? {};
  const path = labels[Label.terminationMessagePath] || '/dev/termination-log';
  const source = info.Mounts?.find((m) => m.Destination === path)?.Source;
  let text = '';
  if (source) {
    const file = await open(source, 'r').catch(() => undefined);
    if (file) {
      try {
        const buf = Buffer.alloc(MAX_FILE_BYTES);
        const { bytesRead } = await file.read(buf, 0, MAX_FILE_BYTES, 0);
        text = buf.subarray(0, bytesRead).toString('utf8');
      } finally {
        await file.close();
      }
    }
  }
  if (text === '' && labels[Label.terminationMessagePolicy] === 'FallbackToLogsOnError' && info.State.ExitCode !== 0) {
    const chunks: Buffer[] = [];
    const sink = new Writable({
      write(chunk: Buffer, _enc, done) {
        chunks.push(chunk);
        done();
      },
    });
    await containerLogs(docker, info.Id, { follow: false, timestamps: false, tailLines: FALLBACK_LINES, stream: 'All' }, sink, AbortSignal.timeout(10_000)).catch(() => undefined);
    const log = Buffer.concat(chunks);
    text = log.subarray(Math.max(0, log.length - FALLBACK_BYTES)).toString('utf8');
  }
  return text === '' ? undefined : text;
}
