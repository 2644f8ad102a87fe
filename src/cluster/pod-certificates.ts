import type { Node, Pod, ServiceAccount } from 'kubernetes-types/core/v1.js';
import type { KubeClient } from '../apiserver/client.js';
import type { Logger } from '../logging/index.js';
import {
  ASSUME_DELETED_MS,
  generateKeyAndRequest,
  MAX_JITTER_MS,
  podCertificateRequest,
  refreshAt,
  requestOutcome,
  type PodCertificateProjection,
  type PodCertificateRequest,
} from '../volumes/pod-certificates.js';
import { Reflector } from './reflector.js';

/** The kubelet reads PodCertificateRequests of certificates.k8s.io/v1 only (GA and served by default at 1.37). */
const PCRS = '/apis/certificates.k8s.io/v1/podcertificaterequests';

/** The condition types that end a request. */
const TERMINAL = new Set(['Issued', 'Denied', 'Failed']);

/** `refreshOverdueDuration`: this long past `beginRefreshAt` without a new certificate, a Warning event says so. */
const REFRESH_OVERDUE_MS = 10 * 60_000;

/**
 * nodelet's cap on the projections it tracks at once (each holds a key and a chain of at most
 * 100 KiB): far above what `--max-pods` pods use, it bounds what pod specs can make nodelet hold.
 */
export const MAX_TRACKED_PROJECTIONS = 4096;

interface Fresh {
  keyPem: string;
  certChain: string;
  refreshAt: number;
  notAfter: number;
  overdueEventSent: boolean;
  expiredEventSent: boolean;
}

/** The kubelet's `credState` machine: initial → wait → fresh ⇄ waitRefresh, and denied/failed for good. */
type CredState =
  | { kind: 'initial' }
  | { kind: 'wait'; keyPem: string; pcrName: string; abandonAt: number }
  | { kind: 'denied' | 'failed'; reason: string; message: string }
  | ({ kind: 'fresh' } & Fresh)
  | ({ kind: 'waitRefresh'; refreshKeyPem: string; refreshPCRName: string; refreshAbandonAt: number } & Fresh);

interface ProjectionRecord {
  state: CredState;
  podUID: string;
  /** Calls on one projection run one at a time. */
  queue: Promise<unknown>;
}

export interface PodCertificatesOptions {
  client: KubeClient;
  log: Logger;
  nodeName: string;
  /** A Warning event on the pod (Denied, Failed, CertificateOverdueForRefresh, CertificateExpired). */
  recordEvent: (pod: Pod, reason: string, message: string) => void;
  /** A request of this pod reached an outcome: its sync can go on without waiting for the next retry. */
  onRequestSettled?: (podUID: string) => void;
  now?: () => number;
  random?: () => number;
}

/**
 * The kubelet's `IssuingManager` (pkg/kubelet/podcertificate/podcertificatemanager.go) for
 * projected `podCertificate` sources. Per projection (pod, volume, source index) it generates a
 * key, creates a PodCertificateRequest and waits for the signer: Issued makes the key and chain
 * the volume's files, Denied or Failed is final for that pod (the volume fails with the
 * condition's reason and message, and a Warning event names them). From `beginRefreshAt` (plus
 * up to 5 minutes of jitter) a new key and request are made; the old pair serves until the new
 * one is issued. The requests of this node are listed and watched with the field selector
 * `spec.nodeName=<node>`, the only list the Node authorizer allows
 * (plugin/pkg/auth/authorizer/node/node_authorizer.go `authorizePodCertificateRequest`); the
 * NodeRestriction admission checks each create against the pod, its service account and the node.
 *
 * The kubelet drives the machine from a work queue fed by the informer and a one-minute refresh
 * pass; here it is driven by the volume's set-up (each sync of a pod still waiting for it) and
 * its periodic refresh (about a minute), and a watched request that settles asks for a sync of
 * its pod (a container start held by its start back-off, 10 s doubling, still waits that out).
 * State is in memory, as the kubelet's: a restart requests anew.
 */
export class PodCertificates {
  readonly #o: PodCertificatesOptions;
  readonly #records = new Map<string, ProjectionRecord>();
  readonly #reflector: Reflector<PodCertificateRequest>;
  #started = false;

  constructor(opts: PodCertificatesOptions) {
    this.#o = opts;
    this.#reflector = new Reflector<PodCertificateRequest>({
      client: opts.client,
      log: opts.log,
      path: PCRS,
      kind: 'PodCertificateRequest',
      fieldSelector: `spec.nodeName=${opts.nodeName}`,
      keyOf: (r) => (r.metadata?.name ? `${r.metadata.namespace ?? ''}/${r.metadata.name}` : undefined),
      // What the machine reads: the name and the status (not the spec, its request, or managedFields).
      transform: (r) => ({
        metadata: { ...(r.metadata?.name ? { name: r.metadata.name } : {}), ...(r.metadata?.namespace ? { namespace: r.metadata.namespace } : {}) },
        ...(r.status ? { status: r.status } : {}),
      }),
      onChange: (all) => this.#settled(all),
    });
  }

  async stop(): Promise<void> {
    if (this.#started) await this.#reflector.stop();
  }

  /** `ForgetPod`: drops every projection of the pod. */
  forgetPod(podUID: string): void {
    for (const [key, rec] of this.#records) if (rec.podUID === podUID) this.#records.delete(key);
  }

  /**
   * `GetPodCertificateCredentialBundle` after a step of the machine (`handleProjection`): the key
   * (PKCS #8 PEM) and the issued chain, or an error while none is issued, once denied or failed,
   * or when the apiserver refuses.
   */
  credentialBundle(pod: Pod, volumeName: string, sourceIndex: number, source: PodCertificateProjection): Promise<{ keyPem: string; certChain: string }> {
    this.#start();
    const meta = pod.metadata ?? {};
    const podUID = meta.uid ?? '';
    const key = JSON.stringify([meta.namespace ?? 'default', meta.name ?? '', podUID, volumeName, sourceIndex]);
    let rec = this.#records.get(key);
    if (!rec) {
      if (this.#records.size >= MAX_TRACKED_PROJECTIONS) return Promise.reject(new Error(`nodelet already tracks ${MAX_TRACKED_PROJECTIONS} podCertificate projections`));
      rec = { state: { kind: 'initial' }, podUID, queue: Promise.resolve() };
      this.#records.set(key, rec);
    }
    const r = rec;
    const run = r.queue.then(async () => {
      await this.#step(r, pod, source);
      return bundleOf(r.state);
    });
    r.queue = run.catch(() => undefined);
    return run;
  }

  #start(): void {
    if (this.#started) return;
    this.#started = true;
    this.#reflector.start();
  }

  #now(): number {
    return this.#o.now?.() ?? Date.now();
  }

  async #step(rec: ProjectionRecord, pod: Pod, source: PodCertificateProjection): Promise<void> {
    const ns = pod.metadata?.namespace ?? 'default';
    const state = rec.state;
    switch (state.kind) {
      case 'initial': {
        const created = await this.#create(pod, source).catch((err: unknown) => {
          throw new Error(`while creating initial PodCertificateRequest: ${(err as Error).message}`);
        });
        rec.state = { kind: 'wait', keyPem: created.keyPem, pcrName: created.name, abandonAt: created.at + ASSUME_DELETED_MS + this.#jitter() };
        // The watch may have it already; if not, the volume waits ("not issued yet").
        return this.#step(rec, pod, source);
      }
      case 'wait': {
        const pcr = this.#reflector.get(`${ns}/${state.pcrName}`);
        if (!pcr) {
          if (this.#reflector.hasSynced && this.#now() > state.abandonAt) {
            rec.state = { kind: 'initial' };
            throw new Error(`PodCertificateRequest ${JSON.stringify(`${ns}/${state.pcrName}`)} appears to have been deleted`);
          }
          return;
        }
        const outcome = requestOutcome(pcr);
        if (outcome.kind === 'pending') return;
        if (outcome.kind === 'issued') {
          rec.state = { kind: 'fresh', keyPem: state.keyPem, certChain: outcome.certChain, refreshAt: refreshAt(outcome.beginRefreshAt, this.#o.random), notAfter: outcome.notAfter, overdueEventSent: false, expiredEventSent: false };
          return;
        }
        rec.state = this.#final(pod, `${ns}/${state.pcrName}`, outcome);
        return;
      }
      case 'fresh': {
        const now = this.#now();
        if (now < state.refreshAt) return;
        this.#dueEvents(pod, state, now);
        let created: { keyPem: string; name: string; at: number };
        try {
          created = await this.#create(pod, source);
        } catch (err) {
          // The issued pair keeps serving; the next refresh tries again.
          this.#o.log.warn({ podUID: rec.podUID, error: (err as Error).message }, 'Could not create refresh PodCertificateRequest; keeping the current certificate');
          return;
        }
        rec.state = { ...state, kind: 'waitRefresh', refreshKeyPem: created.keyPem, refreshPCRName: created.name, refreshAbandonAt: created.at + ASSUME_DELETED_MS + this.#jitter() };
        return;
      }
      case 'waitRefresh': {
        const pcr = this.#reflector.get(`${ns}/${state.refreshPCRName}`);
        const { kind: _kind, refreshKeyPem, refreshPCRName: _name, refreshAbandonAt, ...fresh } = state;
        if (!pcr) {
          if (this.#reflector.hasSynced && this.#now() > refreshAbandonAt) rec.state = { kind: 'fresh', ...fresh };
          return;
        }
        const outcome = requestOutcome(pcr);
        if (outcome.kind === 'issued') {
          rec.state = { kind: 'fresh', keyPem: refreshKeyPem, certChain: outcome.certChain, refreshAt: refreshAt(outcome.beginRefreshAt, this.#o.random), notAfter: outcome.notAfter, overdueEventSent: false, expiredEventSent: false };
        } else if (outcome.kind === 'pending') {
          this.#dueEvents(pod, state, this.#now());
        } else {
          rec.state = this.#final(pod, `${ns}/${state.refreshPCRName}`, outcome);
        }
        return;
      }
      case 'denied':
      case 'failed':
        return;
    }
  }

  /**
   * Denied or Failed: final for the projection, with a Warning event whose reason is the
   * condition's type. (The kubelet's `Eventf` passes the condition's reason as the format and
   * the sentence as an extra argument; the sentence is what it means to say.)
   */
  #final(pod: Pod, name: string, outcome: { kind: 'denied' | 'failed'; reason: string; message: string }): CredState {
    const verb = outcome.kind === 'denied' ? 'was denied' : 'failed';
    this.#o.recordEvent(pod, outcome.kind === 'denied' ? 'Denied' : 'Failed', `PodCertificateRequest ${name} ${verb}, reason=${JSON.stringify(outcome.reason)}, message=${JSON.stringify(outcome.message)}`);
    return { kind: outcome.kind, reason: outcome.reason, message: outcome.message };
  }

  /** The overdue (10 minutes past the refresh time) and expired events, once each per certificate. */
  #dueEvents(pod: Pod, state: Fresh, now: number): void {
    if (now > state.refreshAt + REFRESH_OVERDUE_MS && !state.overdueEventSent) {
      this.#o.recordEvent(pod, 'CertificateOverdueForRefresh', 'PodCertificate refresh overdue');
      state.overdueEventSent = true;
    }
    if (now > state.notAfter && !state.expiredEventSent) {
      this.#o.recordEvent(pod, 'CertificateExpired', 'PodCertificate expired');
      state.expiredEventSent = true;
    }
  }

  #jitter(): number {
    return Math.floor((this.#o.random ?? Math.random)() * MAX_JITTER_MS);
  }

  /** `createPodCertificateRequest`, with the service account's and the node's UIDs read first (as the kubelet does). */
  async #create(pod: Pod, source: PodCertificateProjection): Promise<{ keyPem: string; name: string; at: number }> {
    const ns = pod.metadata?.namespace ?? 'default';
    const saName = pod.spec?.serviceAccountName ?? '';
    let sa: ServiceAccount;
    try {
      sa = await this.#o.client.request<ServiceAccount>('GET', `/api/v1/namespaces/${encodeURIComponent(ns)}/serviceaccounts/${encodeURIComponent(saName)}`);
    } catch (err) {
      throw new Error(`while fetching service account: ${(err as Error).message}`);
    }
    let node: Node;
    try {
      node = await this.#o.client.request<Node>('GET', `/api/v1/nodes/${encodeURIComponent(this.#o.nodeName)}`);
    } catch (err) {
      throw new Error(`while getting node object: ${(err as Error).message}`);
    }
    let generated;
    try {
      generated = await generateKeyAndRequest(source.keyType);
    } catch (err) {
      throw new Error(`while generating keypair: ${(err as Error).message}`);
    }
    const body = podCertificateRequest({ pod, serviceAccountUID: sa.metadata?.uid ?? '', nodeName: this.#o.nodeName, nodeUID: node.metadata?.uid ?? '', source, stubPKCS10Request: generated.stubPKCS10Request });
    let created: PodCertificateRequest;
    try {
      created = await this.#o.client.request<PodCertificateRequest>('POST', `/apis/certificates.k8s.io/v1/namespaces/${encodeURIComponent(ns)}/podcertificaterequests`, { body });
    } catch (err) {
      throw new Error(`while creating on API: ${(err as Error).message}`);
    }
    const createdAt = Date.parse(created.metadata?.creationTimestamp ?? '');
    return { keyPem: generated.keyPem, name: created.metadata?.name ?? '', at: Number.isNaN(createdAt) ? this.#now() : createdAt };
  }

  /** The watch saw requests change: pods whose awaited request has settled are re-synced. */
  #settled(all: PodCertificateRequest[]): void {
    const settled = new Set<string>();
    // The condition types only: the chain is read (and checked) when the projection steps.
    for (const pcr of all) if ((pcr.status?.conditions ?? []).some((c) => TERMINAL.has(c.type))) settled.add(`${pcr.metadata?.namespace ?? ''}/${pcr.metadata?.name ?? ''}`);
    const pods = new Set<string>();
    for (const [key, rec] of this.#records) {
      const ns = (JSON.parse(key) as string[])[0] ?? '';
      const s = rec.state;
      const awaited = s.kind === 'wait' ? s.pcrName : s.kind === 'waitRefresh' ? s.refreshPCRName : undefined;
      if (awaited !== undefined && settled.has(`${ns}/${awaited}`)) pods.add(rec.podUID);
    }
    for (const uid of pods) this.#o.onRequestSettled?.(uid);
  }
}

/** `getCredBundle` of each state. */
function bundleOf(state: CredState): { keyPem: string; certChain: string } {
  switch (state.kind) {
    case 'initial':
    case 'wait':
      throw new Error('credential bundle is not issued yet');
    case 'denied':
      throw new Error(`PodCertificateRequest was permanently denied: reason=${JSON.stringify(state.reason)} message=${JSON.stringify(state.message)}`);
    case 'failed':
      throw new Error(`PodCertificateRequest was permanently failed: reason=${JSON.stringify(state.reason)} message=${JSON.stringify(state.message)}`);
    case 'fresh':
    case 'waitRefresh':
      return { keyPem: state.keyPem, certChain: state.certChain };
  }
}
