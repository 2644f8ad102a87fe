import { Transform } from 'node:stream';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { StatusError, notFound } from '../../api/errors.js';
import { LOG_STREAMS_RETRY_AFTER_SECONDS, type LogStreamSlots } from '../../streaming/logs/limits.js';
import { parseLogQuery, type LogQuery } from '../../streaming/logs/options.js';
import type { LogOptions } from '../../streaming/types.js';
import type { ContainerRef, Host } from '../../host/index.js';
import { getRoute } from '../methods.js';
import { defaultContainerName } from '../params.js';

interface KubeletParams {
  ns: string;
  name: string;
  container: string;
}
interface ApiParams {
  ns: string;
  name: string;
}

/** Bytes buffered between Docker and the socket before the Docker read pauses. */
const BODY_HIGH_WATER_MARK = 64 * 1024;

/**
 * How long after a log's last bytes its chunked terminator (`0\r\n\r\n`) is written. The
 * apiserver relays a non-follow `pods/log` opened over WebSocket with wsstream's `messageCopy`,
 * which drops the bytes of a `Read` that also returns `io.EOF` — and Go's chunked reader returns
 * both together whenever the terminator is already buffered with the last chunk. The kubelet's
 * handler writes the terminator after it returns, a separate write the apiserver has usually read
 * apart; nodelet, ending in the same turn, had its short logs arrive empty (the conformance spec
 * "should support retrieving logs from the container over websockets"). 5 ms kept them apart in
 * 40 of 40 reads on a loaded 2-core machine (1 ms: 35 of 40); a plain or follow read only ends
 * that much later. Counted from when the last bytes were handed on, the gap could be spent
 * before they reached the socket on a loop held up by other work: both left in one write.
 */
const END_GAP_MS = 10;

/**
 * Container logs: `GET /containerLogs/{ns}/{pod}/{container}` (the kubelet's, with its literal
 * error texts) and `GET /api/v1/namespaces/{ns}/pods/{name}/log?container=` (the apiserver's
 * subresource, as kubectl and client-node call it). The query is decoded and validated first (400,
 * 422), then the pod (404), the container (404) and the instance (400 for `previous` without one).
 *
 * The answer is `200 text/plain`, chunked, each piece written as it arrives. The status line waits
 * for the first byte, as the kubelet's flush-writer does, so a runtime failure before any output
 * is still a proper Status; a failure after that ends the body cleanly and is logged.
 *
 * At most `--max-container-log-streams` are served at once (checked after the request itself):
 * beyond, 429 with `Retry-After`, as the streaming session cap answers.
 */
export async function logsPlugin(app: FastifyInstance, opts: { host: Host; slots: LogStreamSlots }): Promise<void> {
  const { host, slots } = opts;

  getRoute<{ Params: KubeletParams; Querystring: LogQuery }>(app, '/containerLogs/:ns/:name/:container', async (request, reply) => {
    const { ns, name, container } = request.params;
    const { options, previous } = parseLogQuery(request.query, { dialect: 'kubelet', pod: name });
    const pod = host.getPodByName(ns, name);
    if (!pod) throw new StatusError('NotFound', `pod "${name}" does not exist`, { name, kind: 'pods' });
    return serve(request, reply, host.resolveLogContainer(pod, container, previous), options);
  });

  getRoute<{ Params: ApiParams; Querystring: LogQuery }>(app, '/api/v1/namespaces/:ns/pods/:name/log', async (request, reply) => {
    const { ns, name } = request.params;
    const { options, previous, container } = parseLogQuery(request.query, { dialect: 'apiserver', pod: name });
    const pod = host.getPodByName(ns, name);
    if (!pod) throw notFound('pods', name);
    return serve(request, reply, host.resolveLogContainer(pod, defaultContainerName(pod, container), previous), options);
  });

  async function serve(request: FastifyRequest, reply: FastifyReply, ref: ContainerRef, options: LogOptions): Promise<FastifyReply> {
    const release = slots.tryAcquire();
    if (!release) {
      throw new StatusError('TooManyRequests', `too many container log streams in flight (limit ${slots.max}); retry later`, { retryAfterSeconds: LOG_STREAMS_RETRY_AFTER_SECONDS });
    }
    const abort = new AbortController();
    // The client hung up (or the answer is complete): stop reading Docker, free the slot.
    reply.raw.once('close', () => {
      abort.abort();
      release();
    });

    let started = false;
    let firstByte!: () => void;
    const first = new Promise<void>((resolve) => (firstByte = resolve));
    const body = new Transform({
      highWaterMark: BODY_HIGH_WATER_MARK,
      transform(chunk: Buffer, _encoding, done) {
        if (!started) {
          started = true;
          firstByte();
        }
        done(null, chunk);
      },
      // The chunked terminator leaves at least END_GAP_MS after the last bytes (see there),
      // counted from a turn after this one: the pipe writes what the transform pushed on a later
      // tick, so on a loaded loop the last chunk may not be on the socket yet when `flush` runs.
      flush(done) {
        if (!started) return done();
        setImmediate(() => setTimeout(done, END_GAP_MS));
      },
    });
    const outcome = host.logs(ref, options, body, abort.signal).then(
      () => undefined,
      (err: unknown) => err ?? new Error('log stream failed'),
    );

    await Promise.race([first, outcome]);
    if (!started) {
      const err = await outcome;
      if (err !== undefined) throw err;
    }
    void outcome.then((err) => {
      if (err !== undefined && !abort.signal.aborted) {
        request.log.warn({ err, pod: `${ref.namespace}/${ref.pod}`, container: ref.container }, 'Container log stream failed after it started');
      }
      if (!body.writableEnded && !body.destroyed) body.end();
    });
    // `text/plain` exactly (the apiserver's LocationStreamer type); chunked even when empty, as the kubelet sets it.
    return reply.code(200).header('content-type', 'text/plain').header('transfer-encoding', 'chunked').send(body);
  }
}

