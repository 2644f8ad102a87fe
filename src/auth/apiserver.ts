import type { ApiserverConnection } from '../config/kubeconfig.js';
import { KubeClient } from '../apiserver/client.js';

/** What the webhooks need from the apiserver: POST a review object, get the decoded answer. */
export interface ReviewClient {
  /** Resolves with the decoded JSON body of a 2xx answer; rejects on anything else or after `timeoutMs`. */
  post(path: string, body: unknown, timeoutMs: number): Promise<unknown>;
  close(): void;
}

/**
 * The webhooks' apiserver client: nodelet's one apiserver client (src/apiserver), narrowed to
 * what a review needs. Error messages name the path and status only, never the token or the body.
 */
export class ApiserverClient implements ReviewClient {
  readonly #client: KubeClient;

  /** A connection (a client of its own is made), or a client made for the webhooks alone, whose client certificate may rotate; `close()` closes it. */
  constructor(conn: ApiserverConnection | KubeClient) {
    this.#client = conn instanceof KubeClient ? conn : new KubeClient(conn, { userAgent: 'nodelet-webhook' });
  }

  post(path: string, body: unknown, timeoutMs: number): Promise<unknown> {
    return this.#client.request<unknown>('POST', path, { body, timeoutMs });
  }

  close(): void {
    this.#client.close();
  }
}
