import { Writable } from 'node:stream';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { StatusError, badRequest, internalError } from '../../api/errors.js';
import type { Host } from '../../host/index.js';
import { MethodNotAllowedError, podDoesNotExist } from '../errors.js';
import { queryValue } from '../params.js';

/** Output kept for one `/run`; more than this is a 413 rather than unbounded memory. */
const MAX_OUTPUT_BYTES = 16 * 1024 * 1024;
/** Same argv limits as exec. */
const MAX_CMD_BYTES = 256 * 1024;

interface Params {
  ns: string;
  name: string;
  uid?: string;
  container: string;
}

/**
 * `POST /run/{ns}/{pod}[/{uid}]/{container}?cmd=…`: runs a command and answers its combined
 * stdout and stderr. As in the kubelet, `cmd` is split on single spaces into argv ("for legacy
 * reasons") and never handed to a shell. A non-zero exit is a 500 carrying the exit code and the
 * output, like the kubelet's `RunInContainer` error.
 */
export async function runPlugin(app: FastifyInstance, opts: { host: Host }): Promise<void> {
  const { host } = opts;
  const handler = async (request: FastifyRequest<{ Params: Params }>, reply: FastifyReply) => {
    const { ns, name, container } = request.params;
    const cmd = queryValue(request, 'cmd');
    if (cmd === '') throw badRequest('you must specify a command in the "cmd" query parameter');
    if (Buffer.byteLength(cmd) > MAX_CMD_BYTES || cmd.includes('\0')) throw badRequest('command too long or contains a NUL byte');
    const pod = host.getPodByName(ns, name);
    if (!pod) throw podDoesNotExist(name);
    const ref = host.resolveContainer(pod, container);

    const chunks: Buffer[] = [];
    let size = 0;
    const abort = new AbortController();
    // The client hung up before the command finished: stop relaying (exec's disconnect policy applies).
    reply.raw.once('close', () => {
      if (!reply.raw.writableEnded) abort.abort();
    });
    const sink = () =>
      new Writable({
        write(chunk: Buffer, _enc, done) {
          size += chunk.length;
          if (size > MAX_OUTPUT_BYTES) {
            abort.abort();
            return done();
          }
          chunks.push(chunk);
          done();
        },
      });
    const argv = cmd.split(' ');
    const result = await host.exec(ref, argv, { stdin: undefined, stdout: sink(), stderr: sink(), tty: false, resizes: undefined, signal: abort.signal }).catch((err: unknown) => {
      if (size > MAX_OUTPUT_BYTES) throw new StatusError('BadRequest', `command output exceeds ${MAX_OUTPUT_BYTES} bytes`);
      throw internalError(`error running command in container: ${(err as Error).message}`);
    });
    const output = Buffer.concat(chunks);
    if (result.kind === 'exited' && result.exitCode !== 0) {
      throw internalError(`command '${cmd}' exited with ${result.exitCode}: ${output.toString('utf8')}`);
    }
    return output;
  };
  for (const url of ['/run/:ns/:name/:container', '/run/:ns/:name/:uid/:container']) {
    app.post(url, async (request: FastifyRequest<{ Params: Params }>, reply) => {
      const output = await handler(request, reply);
      return reply.type('text/plain; charset=utf-8').send(output);
    });
    // The kubelet registers /run for POST only.
    app.route({
      method: app.supportedMethods.filter((m) => m !== 'POST'),
      url,
      config: { methodNotAllowed: true },
      handler: async () => {
        throw new MethodNotAllowedError(['POST']);
      },
    });
  }
}
