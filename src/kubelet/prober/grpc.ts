import { connect, type ClientHttp2Session } from 'node:http2';
import type { Duplex } from 'node:stream';
import type { ProbeOutcome } from './handlers.js';

/**
 * The kubelet's gRPC probe (`pkg/probe/grpc`): one `grpc.health.v1.Health/Check` call over
 * plaintext HTTP/2 to 127.0.0.1:`port` inside the pod's network namespace, success when the
 * answer is `SERVING`. Messages are the kubelet's, so `Unhealthy` events read the same.
 *
 * gRPC framing is small enough to write here (a 5-byte prefix and a one-field protobuf each
 * way); HTTP/2 itself is Node's. `dial` gives the byte stream to the pod's port.
 */
export async function grpcHealthCheck(port: number, service: string, timeoutMs: number, dial: (signal: AbortSignal) => Duplex): Promise<ProbeOutcome> {
  const addr = `127.0.0.1:${port}`;
  const timeout = `${timeoutMs / 1000}s`;
  const controller = new AbortController();
  let session: ClientHttp2Session | undefined;
  let timer: NodeJS.Timeout | undefined;
  try {
    const call = new Promise<ProbeOutcome>((resolve) => {
      let connected = false;
      timer = setTimeout(() => resolve(failure(connected ? `timeout: health rpc did not complete within ${timeout}` : `timeout: failed to connect service "${addr}" within ${timeout}: context deadline exceeded`)), timeoutMs);
      session = connect(`http://${addr}`, { createConnection: () => dial(controller.signal) });
      const broken = (err: Error) => resolve(failure(connected ? `error: health rpc probe failed: rpc error: code = Unavailable desc = ${err.message}` : `error: failed to connect service at "${addr}": ${err.message}`));
      session.on('error', broken);
      // Connected once the server's SETTINGS arrive: a Duplex relay counts as open at once.
      session.once('remoteSettings', () => (connected = true));
      const req = session.request({
        ':method': 'POST',
        ':path': '/grpc.health.v1.Health/Check',
        'content-type': 'application/grpc',
        te: 'trailers',
        'user-agent': 'kube-probe/1.34',
      });
      const chunks: Buffer[] = [];
      let size = 0;
      let headers: Record<string, unknown> = {};
      req.on('response', (h) => (headers = h));
      req.on('data', (chunk: Buffer) => {
        if (size < MAX_RESPONSE) chunks.push(chunk);
        size += chunk.length;
      });
      req.on('trailers', (trailers) => (headers = { ...headers, ...trailers }));
      req.on('error', broken);
      req.on('end', () => resolve(verdict(headers, Buffer.concat(chunks))));
      req.end(encodeRequest(service));
    });
    return await call;
  } finally {
    clearTimeout(timer);
    session?.destroy();
    controller.abort();
  }
}

/** A health answer is a few bytes; anything past this is not kept. */
const MAX_RESPONSE = 4096;

const failure = (output: string): ProbeOutcome => ({ result: 'failure', output });

/** grpc-go's `codes.Code` names, by number. */
const codeNames = ['OK', 'Canceled', 'Unknown', 'InvalidArgument', 'DeadlineExceeded', 'NotFound', 'AlreadyExists', 'PermissionDenied', 'ResourceExhausted', 'FailedPrecondition', 'Aborted', 'OutOfRange', 'Unimplemented', 'Internal', 'Unavailable', 'DataLoss', 'Unauthenticated'];
const servingStatus = ['UNKNOWN', 'SERVING', 'NOT_SERVING', 'SERVICE_UNKNOWN'];

/** The gRPC message carrying `HealthCheckRequest{service}`: 5-byte prefix (uncompressed, length), protobuf field 1. */
export function encodeRequest(service: string): Buffer {
  const name = Buffer.from(service, 'utf8');
  const body = name.length ? Buffer.concat([Buffer.from([0x0a]), varint(name.length), name]) : Buffer.alloc(0);
  const prefix = Buffer.alloc(5);
  prefix.writeUInt32BE(body.length, 1);
  return Buffer.concat([prefix, body]);
}

/** The probe result from the call's headers and trailers and its response body. */
export function verdict(headers: Record<string, unknown>, body: Buffer): ProbeOutcome {
  const code = Number(headers['grpc-status'] ?? (headers[':status'] === 200 ? NaN : 2));
  const message = decodeMessage(String(headers['grpc-message'] ?? ''));
  if (code === 12) return failure(`error: this server does not implement the grpc health protocol (grpc.health.v1.Health): ${message}`);
  if (code !== 0) {
    const name = codeNames[code] ?? `Code(${code})`;
    return failure(`error: health rpc probe failed: rpc error: code = ${Number.isNaN(code) ? 'Internal' : name} desc = ${Number.isNaN(code) ? 'server closed the stream without sending trailers' : message}`);
  }
  const status = decodeResponse(body);
  if (status === undefined) return failure('error: health rpc probe failed: rpc error: code = Internal desc = malformed HealthCheckResponse');
  if (status !== 1) return failure(`service unhealthy (responded with "${servingStatus[status] ?? String(status)}")`);
  return { result: 'success', output: 'service healthy' };
}

/** `HealthCheckResponse.status` (field 1, a varint; absent means 0, UNKNOWN) from one gRPC message. */
export function decodeResponse(body: Buffer): number | undefined {
  if (body.length < 5 || body[0] !== 0) return undefined;
  const length = body.readUInt32BE(1);
  if (body.length < 5 + length) return undefined;
  const msg = body.subarray(5, 5 + length);
  let status = 0;
  for (let at = 0; at < msg.length; ) {
    const tag = readVarint(msg, at);
    if (!tag) return undefined;
    at = tag.next;
    const wire = tag.value & 7;
    if (wire === 0) {
      const v = readVarint(msg, at);
      if (!v) return undefined;
      if (tag.value >> 3 === 1) status = v.value;
      at = v.next;
    } else if (wire === 2) {
      const len = readVarint(msg, at);
      if (!len) return undefined;
      at = len.next + len.value;
    } else if (wire === 5) at += 4;
    else if (wire === 1) at += 8;
    else return undefined;
  }
  return status;
}

function readVarint(buf: Buffer, at: number): { value: number; next: number } | undefined {
  let value = 0;
  for (let shift = 0, i = at; i < buf.length && shift < 35; shift += 7, i++) {
    const byte = buf[i] ?? 0;
    value += (byte & 0x7f) * 2 ** shift;
    if (!(byte & 0x80)) return { value, next: i + 1 };
  }
  return undefined;
}

function varint(n: number): Buffer {
  const out: number[] = [];
  for (let v = n; ; v = Math.floor(v / 128)) {
    if (v < 128) {
      out.push(v);
      return Buffer.from(out);
    }
    out.push((v % 128) | 0x80);
  }
}

function decodeMessage(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}
