import { readFile } from 'node:fs/promises';
import { request } from 'node:https';
import type { Container, Pod, PodSpec } from 'kubernetes-types/core/v1.js';
import { ApiError, type KubeClient } from '../../src/apiserver/client.js';
import type { Config } from '../../src/config/types.js';
import type { StartOptions } from '../../src/nodelet.js';
import type { ControlPlane } from './control-plane.js';
import { BUSYBOX } from './docker.js';
import { startTestNode, type TestNode } from './nodelet.js';

export interface ClusterNode extends TestNode {
  /** GET from nodelet's own HTTPS API as the apiserver does (its kubelet client certificate). */
  getLocal<T>(path: string): Promise<{ status: number; body: T }>;
  /** Any method, same identity; the body is decoded JSON when it parses, else text. */
  requestLocal<T = string>(method: string, path: string): Promise<{ status: number; body: T }>;
}

interface Teardown {
  teardown(fn: () => Promise<void> | void): void;
}

/**
 * A nodelet in cluster mode, a node of `cp`: its own node name and `system:node:<name>`
 * kubeconfig, HTTPS with the control plane's CA as client CA (so the apiserver's kubelet client
 * certificate authenticates), TokenReview/SubjectAccessReview webhooks (the cluster-mode
 * defaults), and short timings so tests see changes quickly.
 */
export async function startClusterNode(
  t: Teardown,
  cp: ControlPlane,
  overrides: Partial<Config> = {},
  start: Pick<StartOptions, 'streaming' | 'clusterTiming' | 'evictionMonitoringPeriodMs' | 'volumeRefreshMs'> = {},
): Promise<ClusterNode> {
  const nodeName = overrides.nodeName ?? `cn${Math.random().toString(16).slice(2, 10)}`;
  const kubeconfig = await cp.nodeKubeconfig(nodeName);
  const node = await startTestNode(
    t,
    {
      nodeName,
      kubeconfig,
      clientCAFile: cp.caFile,
      anonymousAuth: false,
      authenticationTokenWebhook: true,
      authorizationMode: 'Webhook',
      nodeStatusUpdateFrequencyMs: 1_000,
      ...overrides,
    },
    { clusterTiming: { resyncMs: 1_000, mirrorPeriodMs: 1_000, minWatchTimeoutSeconds: 30 }, ...start },
  );
  const [cert, key] = await Promise.all([readFile(cp.kubeletClientCert), readFile(cp.kubeletClientKey)]);
  const requestLocal = <T>(method: string, path: string) =>
    new Promise<{ status: number; body: T }>((resolve, reject) => {
      // nodelet's serving certificate is self-signed, as the apiserver (without
      // --kubelet-certificate-authority) accepts it.
      const req = request(node.url + path, { method, cert, key, rejectUnauthorized: false }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          let body: unknown = text;
          try {
            body = JSON.parse(text);
          } catch {
            /* plain text */
          }
          resolve({ status: res.statusCode ?? 0, body: body as T });
        });
        res.on('error', reject);
      });
      req.on('error', reject);
      req.end();
    });
  return Object.assign(node, { requestLocal, getLocal: <T>(path: string) => requestLocal<T>('GET', path) });
}

/**
 * A default-namespace pod bound to `nodeName` (the scheduler bypassed), with no service-account
 * token and a 1 s grace: one container `main`, busybox sleeping. `spec` is merged over that pod's
 * spec and `main` over its container.
 */
export function boundSleeper(nodeName: string, name: string, spec: Partial<PodSpec> = {}, main: Partial<Container> = {}): Pod {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name },
    spec: {
      automountServiceAccountToken: false,
      nodeName,
      terminationGracePeriodSeconds: 1,
      containers: [{ name: 'main', image: BUSYBOX, command: ['sh', '-c', 'sleep 3600'], ...main }],
      ...spec,
    },
  };
}

/** A default-namespace pod as the apiserver has it; undefined once it is gone (404). */
export function getPodIfAny(admin: KubeClient, name: string): Promise<Pod | undefined> {
  return admin.request<Pod>('GET', `/api/v1/namespaces/default/pods/${name}`).catch((err: unknown) => (err instanceof ApiError && err.code === 404 ? undefined : Promise.reject(err)));
}
