import type { APIResourceList } from 'kubernetes-types/meta/v1.js';
import type { LabelSelector } from 'kubernetes-types/meta/v1.js';
import { isNotFound, type KubeClient } from '../apiserver/client.js';
import type { Logger } from '../logging/index.js';
import { selectBySigner, trustAnchorsOfBundle, trustAnchorsOfSigner, type ClusterTrustBundle } from '../volumes/trust-anchors.js';
import { Reflector } from './reflector.js';

/** The versions the kubelet looks for, in its order (`ensureManagerSet`). */
export const TRUST_BUNDLE_VERSIONS = ['certificates.k8s.io/v1', 'certificates.k8s.io/v1beta1', 'certificates.k8s.io/v1alpha1'] as const;

/** How long the first use waits for the first list, as the kubelet's `WaitForCacheSync` (10 s). */
const SYNC_WAIT_MS = 10_000;

/** `synced` settles at the first list, or 10 s after the start, whichever comes first. */
type State = { kind: 'unset' } | { kind: 'none' } | { kind: 'informer'; version: string; reflector: Reflector<ClusterTrustBundle>; synced: Promise<void> };

/**
 * The kubelet's `LazyInformerManager` (pkg/kubelet/clustertrustbundle/clustertrustbundle_manager.go):
 * on first use, discovery picks the newest served version of certificates.k8s.io that has
 * `clustertrustbundles` and an informer (here a reflector) lists and watches every bundle; a use
 * waits for the first list until 10 s after the start. Without any version the projection fails for good, as the
 * kubelet's NoopManager does. The Node authorizer lets a node get, list and watch them (the
 * `system:node` rules, plugin/pkg/auth/authorizer/rbac/bootstrappolicy/policy.go). The projected
 * volume's refresh reads the store again, so changed bundles reach the files within a refresh
 * period; the kubelet's normalization cache is left out (the store is in memory).
 */
export class ClusterTrustBundles {
  readonly #client: KubeClient;
  readonly #log: Logger;
  #state: State = { kind: 'unset' };
  #choosing: Promise<void> | undefined;
  #stopped = false;

  constructor(client: KubeClient, log: Logger) {
    this.#client = client;
    this.#log = log;
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    await this.#choosing?.catch(() => undefined);
    if (this.#state.kind === 'informer') await this.#state.reflector.stop();
  }

  /** `GetTrustAnchorsByName`. */
  async getTrustAnchorsByName(name: string, allowMissing: boolean): Promise<string> {
    const reflector = await this.#informer();
    return trustAnchorsOfBundle(name, reflector.get(name), allowMissing);
  }

  /** `GetTrustAnchorsBySigner`: nil selector matches nothing, an empty one everything. */
  async getTrustAnchorsBySigner(signerName: string, labelSelector: LabelSelector | undefined, allowMissing: boolean): Promise<string> {
    const reflector = await this.#informer();
    let selected: ClusterTrustBundle[];
    try {
      selected = selectBySigner(reflector.list(), signerName, labelSelector);
    } catch (err) {
      throw new Error(`while parsing label selector: ${(err as Error).message}`);
    }
    return trustAnchorsOfSigner(selected, allowMissing);
  }

  async #informer(): Promise<Reflector<ClusterTrustBundle>> {
    if (this.#state.kind === 'unset') {
      this.#choosing ??= this.#choose().finally(() => (this.#choosing = undefined));
      try {
        await this.#choosing;
      } catch (err) {
        throw new Error(`failed to ensure informer manager for ClusterTrustBundles: ${(err as Error).message}`);
      }
    }
    const state = this.#state;
    if (state.kind === 'none') throw new Error('ClusterTrustBundle projection is not supported: the apiserver serves no version of the ClusterTrustBundle API');
    if (state.kind !== 'informer') throw new Error('ClusterTrustBundle informer has not yet started');
    // Uses in the first 10 s wait for the first list; later ones fail at once until it arrives.
    await state.synced;
    if (!state.reflector.hasSynced) throw new Error('ClusterTrustBundle informer has not yet synced');
    return state.reflector;
  }

  async #choose(): Promise<void> {
    for (const gv of TRUST_BUNDLE_VERSIONS) {
      let resources: APIResourceList;
      try {
        resources = await this.#client.request<APIResourceList>('GET', `/apis/${gv}`);
      } catch (err) {
        if (isNotFound(err)) continue;
        throw new Error(`failed to determine which informer manager to choose: ${(err as Error).message}`);
      }
      if (!resources.resources.some((r) => r.name === 'clustertrustbundles')) continue;
      if (this.#stopped) throw new Error('stopped');
      let onSynced: () => void = () => undefined;
      const synced = new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, SYNC_WAIT_MS);
        timer.unref();
        onSynced = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      const reflector = new Reflector<ClusterTrustBundle>({
        client: this.#client,
        log: this.#log,
        path: `/apis/${gv}/clustertrustbundles`,
        kind: 'ClusterTrustBundle',
        keyOf: (b) => b.metadata?.name,
        // Only what a projection reads is kept (not managedFields and the like).
        transform: (b) => ({
          metadata: { ...(b.metadata?.name !== undefined ? { name: b.metadata.name } : {}), ...(b.metadata?.labels ? { labels: b.metadata.labels } : {}) },
          spec: { ...(b.spec?.signerName ? { signerName: b.spec.signerName } : {}), trustBundle: b.spec?.trustBundle ?? '' },
        }),
        onChange: () => onSynced(),
      });
      reflector.start();
      this.#state = { kind: 'informer', version: gv, reflector, synced };
      this.#log.info({ apiGroup: gv }, 'Started ClusterTrustBundle informer');
      return;
    }
    this.#state = { kind: 'none' };
    this.#log.info({}, "No version of the ClusterTrustBundle API was found, the ClusterTrustBundle informer won't be started");
  }
}
