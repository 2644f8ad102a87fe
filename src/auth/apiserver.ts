import { Agent as HttpAgent, request as httpRequest, type IncomingMessage } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import type { ApiserverConnection } from '../config/kubeconfig.js';

/** What the webhooks need from the apiserver: POST a review object, get the decoded answer. */
export interface ReviewClient {
  /** Resolves with the decoded JSON body of a 2xx answer; rejects on anything else or after `timeoutMs`. */
  post(path: string, body: unknown, timeoutMs: number): Promise<unknown>;
  close(): void;
}

/** Largest review answer accepted (a TokenReview with many groups is a few KiB). */
const MAX_ANSWER_BYTES = 1 << 20;

/**
 * A minimal apiserver client over node:http(s), configured from the kubeconfig: TLS verification
 * against its CA (or the system roots), bearer token or client certificate, keep-alive
 * connections. Error messages name the path and status only, never the token or the body sent.
 */
export class ApiserverClient implements ReviewClient {
  readonly #conn: ApiserverConnection;
  readonly #agent: HttpAgent;
  readonly #https: boolean;

  constructor(conn: ApiserverConnection) {
    this.#conn = conn;
    this.#https = conn.server.startsWith('https:');
    this.#agent = this.#https
      ? new HttpsAgent({
          keepAlive: true,
          maxSockets: 32,
          rejectUnauthorized: !conn.insecureSkipTLSVerify,
          minVersion: 'TLSv1.2',
          ...(conn.ca ? { ca: conn.ca } : {}),
          ...(conn.clientCert && conn.clientKey ? { cert: conn.clientCert, key: conn.clientKey } : {}),
          ...(conn.tlsServerName ? { servername: conn.tlsServerName } : {}),
        })
      : new HttpAgent({ keepAlive: true, maxSockets: 32 });
  }

  post(path: string, body: unknown, timeoutMs: number): Promise<unknown> {
    const payload = Buffer.from(JSON.stringify(body));
    const url = new URL(this.#conn.server + path);
    const headers: Record<string, string> = {
      'content-type': 'application/json',
      accept: 'application/json',
      'content-length': String(payload.length),
      'user-agent': 'nodelet',
    };
    if (this.#conn.token !== undefined) headers.authorization = `Bearer ${this.#conn.token}`;
    const request = this.#https ? httpsRequest : httpRequest;
    return new Promise((resolve, reject) => {
      let settled = false;
      const finish = (err: Error | undefined, value?: unknown) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        if (err) reject(err);
        else resolve(value);
      };
      const req = request(url, { method: 'POST', headers, agent: this.#agent }, (res: IncomingMessage) => {
        const chunks: Buffer[] = [];
        let size = 0;
        res.on('data', (c: Buffer) => {
          size += c.length;
          if (size > MAX_ANSWER_BYTES) {
            req.destroy();
            finish(new Error(`POST ${path}: answer larger than ${MAX_ANSWER_BYTES} bytes`));
          } else chunks.push(c);
        });
        res.on('error', (err) => finish(new Error(`POST ${path}: ${err.message}`)));
        res.on('end', () => {
          const status = res.statusCode ?? 0;
          if (status < 200 || status > 299) return finish(new Error(`POST ${path}: the apiserver answered ${status}`));
          try {
            finish(undefined, JSON.parse(Buffer.concat(chunks).toString('utf8')));
          } catch {
            finish(new Error(`POST ${path}: the answer is not JSON`));
          }
        });
      });
      const timer = setTimeout(() => {
        finish(new Error(`POST ${path}: no answer within ${timeoutMs} ms`));
        req.destroy();
      }, timeoutMs);
      req.on('error', (err: NodeJS.ErrnoException) => finish(new Error(`POST ${path}: ${err.code ?? err.message}`)));
      req.end(payload);
    });
  }

  close(): void {
    this.#agent.destroy();
  }
}
