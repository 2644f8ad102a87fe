import { Duplex, Writable } from 'node:stream';
import type { Runtime } from '../../runtime/types.js';
import { MAX_PROBE_OUTPUT, type ProbeIO } from './handlers.js';

/** A Writable that keeps the first `limit` bytes written to it and drops the rest. */
function collector(limit: number): { stream: Writable; text: () => string; bytes: () => Buffer } {
  const chunks: Buffer[] = [];
  let size = 0;
  const stream = new Writable({
    write(chunk: Buffer, _enc, done) {
      if (size < limit) {
        const keep = chunk.subarray(0, limit - size);
        chunks.push(keep);
        size += keep.length;
      }
      done();
    },
  });
  return { stream, text: () => Buffer.concat(chunks).toString('utf8'), bytes: () => Buffer.concat(chunks) };
}

/**
 * Probe I/O through the runtime: commands through `exec` in the container, connections through
 * the same in-namespace relay port-forward uses (inside the sandbox's network namespace: to
 * `podIP` by default, as the kubelet probes the pod IP, or 127.0.0.1 without one), each bounded
 * by the probe's timeout.
 */
export function runtimeProbeIO(runtime: Pick<Runtime, 'exec' | 'portForward'>, containerId: string, sandboxId: string, podIP?: string): ProbeIO {
  const defaultHost = podIP ?? '127.0.0.1';
  return {
    host: defaultHost,
    async exec(cmd, timeoutMs) {
      const out = collector(MAX_PROBE_OUTPUT);
      const signal = AbortSignal.timeout(timeoutMs);
      const result = await Promise.race([
        runtime.exec(containerId, cmd, { stdin: undefined, stdout: out.stream, stderr: out.stream, tty: false, resizes: undefined, signal }),
        new Promise<never>((_, reject) => signal.addEventListener('abort', () => reject(new Error(`command timed out after ${timeoutMs / 1000}s`)), { once: true })),
      ]);
      return { exitCode: result.kind === 'exited' ? result.exitCode : -1, output: out.text() };
    },
    async connect(port, send, timeoutMs, until, host = defaultHost) {
      const received = collector(MAX_PROBE_OUTPUT);
      const controller = new AbortController();
      const timer = setTimeout(() => controller.abort(), timeoutMs);
      let sent = false;
      const stream = new Duplex({
        read() {
          if (sent) return;
          sent = true;
          if (send.length) this.push(send);
          // Half-close: the request is complete (or, for tcpSocket, there is none).
          this.push(null);
        },
        write(chunk: Buffer, _enc, done) {
          received.stream.write(chunk);
          if (until?.(received.bytes())) controller.abort();
          done();
        },
      });
      try {
        await runtime.portForward(sandboxId, port, stream, controller.signal, host);
      } catch (err) {
        // A connection that answered before we cut it short is a success for the caller to judge.
        if (received.bytes().length === 0 || !controller.signal.aborted) throw err;
      } finally {
        clearTimeout(timer);
      }
      // The relay reads the request only once the in-namespace connection is open: aborted before
      // that (and nothing came back), the timeout struck while dialing, where forwardPort resolves
      // quietly; for tcpSocket that was read as a success. A timeout is a failure.
      if (controller.signal.aborted && !sent && received.bytes().length === 0) throw new Error(`no connection to port ${port} within ${timeoutMs / 1000}s`);
      if (controller.signal.aborted && received.bytes().length === 0 && until) throw new Error(`no answer from port ${port} within ${timeoutMs / 1000}s`);
      return received.bytes();
    },
    dial(port, signal, host = defaultHost) {
      const [local, remote] = duplexPair();
      runtime.portForward(sandboxId, port, remote, signal, host).then(
        () => local.push(null),
        (err: unknown) => local.destroy(err instanceof Error ? err : new Error(String(err))),
      );
      signal.addEventListener('abort', () => local.destroy(), { once: true });
      return local;
    },
  };
}

/**
 * Two Duplex ends joined back to back: what one writes the other reads, ending one ends the
 * other's readable side. A probe's traffic is a few kilobytes, so writes do not wait on the
 * peer's reader (HTTP/2's own flow control bounds what is in flight).
 */
function duplexPair(): [Duplex, Duplex] {
  const ends: Duplex[] = [];
  const end = (peer: () => Duplex | undefined) =>
    new Duplex({
      read() {},
      write(chunk: Buffer, _enc, done) {
        peer()?.push(chunk);
        done();
      },
      final(done) {
        peer()?.push(null);
        done();
      },
      destroy(err, done) {
        const other = peer();
        if (other && !other.destroyed) other.destroy();
        done(err);
      },
    });
  ends.push(end(() => ends[1]), end(() => ends[0]));
  return [ends[0] as Duplex, ends[1] as Duplex];
}
