import { chmod, lstat, mkdir, readFile, realpath, rm, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { ClusterTrustBundleProjection, ConfigMap, Container, Pod, Secret, Volume } from 'kubernetes-types/core/v1.js';
import { quantityOf } from '../api/quantity.js';
import type { Logger } from '../logging/index.js';
import type { Mount } from '../runtime/types.js';
import { writeAtomically, type FileProjection } from './atomic-writer.js';
import type { PodRuntimeInfo } from './downward-api.js';
import { ContainerConfigError, needsClusterMode } from './errors.js';
import { etcHostsContent, etcHostsPath, mountsEtcHosts } from './etc-hosts.js';
import { ExpansionBudget, MAX_SUBPATH_BYTES } from './expansion.js';
import { mountsResolvConf, resolvConfPath } from './resolv-conf.js';
import { checkHostPath } from './host-path.js';
import { isMountPoint, mountsUnder, mountTmpfs, unmountUnder } from './host.js';
import { setVolumeOwnership } from './ownership.js';
import { configMapPayload, DEFAULT_MODE, downwardAPIPayload, secretPayload } from './payloads.js';
import { alwaysReadOnly, memoryBacked, mountRefusal, pluginDir, refreshable, tokenNeedsRefresh, volumeKindOf, volumeRefusal, type VolumeKind } from './plugins.js';
import type { PodObjectSource } from './source.js';
import { MAX_TRUST_ANCHORS_BYTES_PER_VOLUME } from './trust-anchors.js';
import { podCertificateFiles, type PodCertificateProjection } from './pod-certificates.js';
import { bindSubPath, cleanSubPaths, safeMakeDir, SubPathError, subPathRefusal } from './subpath.js';

export interface VolumeManagerOptions {
  /** `--root-dir`: pod volumes live under `<rootDir>/pods/<uid>/volumes`. */
  rootDir: string;
  /** The apiserver's secrets, configMaps and tokens; absent in standalone mode. */
  objects?: PodObjectSource | undefined;
  log: Logger;
  /** The newest pod object for a UID, so refreshes follow label changes; undefined once it is gone. */
  getPod?: (uid: string) => Pod | undefined;
  /** Every pod this node should run: after a restart their volumes are adopted and refreshed again. */
  listPods?: () => readonly Pod[];
  /** Addresses and allocatable resources for a pod adopted after a restart. */
  podInfo?: (pod: Pod) => PodRuntimeInfo;
  /** How often secret, configMap, downwardAPI and projected volumes are re-synced (the kubelet: about a minute). */
  refreshPeriodMs?: number;
  /** Clock (token refresh); tests pass their own. */
  now?: () => number;
  /** The node's hosts file, copied for host-network pods (default /etc/hosts); tests pass their own. */
  nodeHostsFile?: string;
  /** `--cluster-domain`: the domain of pods with a `subdomain` in their hosts file. */
  clusterDomain?: string;
  /** The node's /etc/resolv.conf, copied when a pod's resolver settings are all empty (as CRI runtimes do); tests pass their own. */
  nodeResolvConfFile?: string;
}

interface SetUpVolume {
  readonly kind: VolumeKind;
  /** The host path containers bind-mount. */
  readonly path: string;
}

interface TokenState {
  readonly token: string;
  readonly expirationTimestamp: Date;
  readonly expirationSeconds: number;
}

interface PodVolumes {
  pod: Pod;
  info: PodRuntimeInfo;
  readonly ready: Map<string, SetUpVolume>;
  readonly tokens: Map<string, TokenState>;
  lastSync: number;
  /** Operations on one pod's volumes run one at a time. */
  queue: Promise<unknown>;
}

const safeUID = /^[A-Za-z0-9][A-Za-z0-9._-]*$/;

/**
 * The kubelet's volume manager for the volume types nodelet supports: sets a pod's volumes up
 * under `<rootDir>/pods/<uid>/volumes/kubernetes.io~<plugin>/<name>` before its containers start,
 * keeps secret, configMap, downwardAPI and projected volumes (and service-account tokens)
 * fresh while the pod exists, and removes everything when the pod is gone.
 */
export class VolumeManager {
  readonly #o: VolumeManagerOptions;
  readonly #pods = new Map<string, PodVolumes>();
  readonly #refreshMs: number;
  #timer: NodeJS.Timeout | undefined;
  #refreshing: Promise<void> | undefined;

  constructor(opts: VolumeManagerOptions) {
    this.#o = opts;
    this.#refreshMs = opts.refreshPeriodMs ?? 60_000;
  }

  /** `<rootDir>/pods/<uid>`. */
  podDir(uid: string): string {
    if (!safeUID.test(uid)) throw new ContainerConfigError(`pod UID ${JSON.stringify(uid)} cannot name a directory`);
    return join(this.#o.rootDir, 'pods', uid);
  }

  volumeDir(uid: string, kind: VolumeKind, name: string): string {
    return join(this.podDir(uid), 'volumes', pluginDir[kind], name);
  }

  start(): void {
    if (this.#timer) return;
    this.#timer = setInterval(() => {
      if (!this.#refreshing) this.#refreshing = this.refresh().finally(() => (this.#refreshing = undefined));
    }, this.#refreshMs);
    this.#timer.unref();
  }

  async stop(): Promise<void> {
    clearInterval(this.#timer);
    this.#timer = undefined;
    await this.#refreshing;
  }

  /**
   * Sets up every volume of `pod` that is not yet (idempotent: a tmpfs already mounted is kept),
   * re-syncing refreshable ones older than the refresh period. A refused or failing volume
   * throws a `ContainerConfigError` (event `FailedMount`) after the others were set up.
   */
  setUpPod(pod: Pod, info: PodRuntimeInfo): Promise<void> {
    const uid = pod.metadata?.uid ?? '';
    const state = this.#state(pod, info);
    return this.#serial(state, async () => {
      const volumes = pod.spec?.volumes ?? [];
      for (const v of volumes) {
        const refusal = volumeRefusal(v);
        if (refusal) throw new ContainerConfigError(refusal, { mount: true });
      }
      const errors: string[] = [];
      const stale = Date.now() - state.lastSync >= this.#refreshMs;
      for (const v of volumes) {
        const ready = state.ready.get(v.name);
        if (ready && !(stale && refreshable.has(ready.kind))) continue;
        try {
          state.ready.set(v.name, await this.#setUp(uid, state, v));
        } catch (err) {
          if (err instanceof ContainerConfigError) throw err;
          // A volume already in place keeps serving its last contents, as a refresh failure does.
          if (ready) this.#o.log.warn({ podUID: uid, volume: v.name, error: (err as Error).message }, 'Could not refresh volume; keeping its previous contents');
          else errors.push(`MountVolume.SetUp failed for volume ${JSON.stringify(v.name)} : ${(err as Error).message}`);
        }
      }
      if (stale && !errors.length) state.lastSync = Date.now();
      if (errors.length) throw new ContainerConfigError(errors.join('; '), { mount: true });
    });
  }

  /**
   * The bind mounts of `container` (`makeMounts`): volume path, `subPath` or `subPathExpr`
   * (expanded from `env`, created when missing), read-only as asked or as the volume type
   * demands. A subPath is never handed to Docker as a path inside the volume, which the pod's
   * containers could change before it is mounted: it is opened safely and bind-mounted onto
   * `<rootDir>/pods/<uid>/volume-subpaths/<volume>/<container>/<index>` (subpath.ts), and Docker
   * binds that. An expanded subpath holds at most `MAX_SUBPATH_BYTES` (PATH_MAX) and counts
   * against the container's `budget` (see expansion.ts); past either the container is refused
   * before the path is built. Call after `setUpPod`.
   */
  async mountsFor(pod: Pod, container: Container, env: ReadonlyMap<string, string>, budget = new ExpansionBudget()): Promise<Mount[]> {
    const state = this.#pods.get(pod.metadata?.uid ?? '');
    const mounts: Mount[] = [];
    for (const [index, m] of (container.volumeMounts ?? []).entries()) {
      const refusal = mountRefusal(m);
      if (refusal) throw new ContainerConfigError(refusal);
      const vol = state?.ready.get(m.name);
      if (!vol) throw new ContainerConfigError(`volumeMount ${JSON.stringify(m.name)}: volume is not set up`, { mount: true });
      let subPath = m.subPath ?? '';
      if (m.subPathExpr) {
        const missing = new Set<string>();
        subPath = budget.expand(`volumeMount ${JSON.stringify(m.name)}: subPathExpr`, m.subPathExpr, (name) => {
          const value = env.get(name);
          if (!value) missing.add(name);
          return value ?? '';
        }, MAX_SUBPATH_BYTES);
        if (missing.size) throw new ContainerConfigError(`volumeMount ${JSON.stringify(m.name)}: subPathExpr ${m.subPathExpr}: missing value for ${[...missing].sort().join(', ')}`);
      }
      let hostPath = vol.path;
      if (subPath && state) hostPath = await this.#subPath(pod.metadata?.uid ?? '', state, vol, subPath, m.name, container.name, index);
      const readOnly = m.readOnly === true || alwaysReadOnly.has(vol.kind);
      const rro = m.recursiveReadOnly;
      mounts.push({
        hostPath,
        containerPath: m.mountPath,
        readOnly,
        ...(readOnly ? { recursiveReadOnly: rro === 'Enabled' ? 'Enabled' : rro === 'IfPossible' ? 'IfPossible' : 'Disabled' } : {}),
      });
    }
    return mounts;
  }

  /**
   * The bind mount of the pod's generated hosts file over `container`'s /etc/hosts
   * (`makeHostsMount`), written to `<rootDir>/pods/<uid>/etc-hosts` on every container start so
   * it follows the pod's IPs; undefined when the container mounts its own /etc/hosts.
   */
  /** The host directory of the pod's emptyDir volume `name` (set up by `setUpPod`); undefined for any other name. */
  emptyDirPath(pod: Pod, name: string): string | undefined {
    const v = (pod.spec?.volumes ?? []).find((x) => x.name === name);
    return v?.emptyDir ? this.volumeDir(pod.metadata?.uid ?? '', 'emptyDir', name) : undefined;
  }

  /**
   * The host directory of the pod's volume `name` when it counts in the pod's ephemeral storage on
   * nodefs (the kubelet's `localVolumeNames`: an emptyDir not backed by memory); undefined for any other.
   */
  localEphemeralVolumeDir(pod: Pod, name: string): string | undefined {
    const v = (pod.spec?.volumes ?? []).find((x) => x.name === name);
    return v?.emptyDir && v.emptyDir.medium !== 'Memory' ? this.volumeDir(pod.metadata?.uid ?? '', 'emptyDir', name) : undefined;
  }

  async etcHostsMount(pod: Pod, container: Container, podIPs: readonly string[]): Promise<Mount | undefined> {
    const uid = pod.metadata?.uid ?? '';
    if (!mountsEtcHosts(container) || !safeUID.test(uid)) return undefined;
    const file = join(this.podDir(uid), 'etc-hosts');
    await mkdir(this.podDir(uid), { recursive: true });
    await writeFile(file, await etcHostsContent(pod, podIPs, this.#o.nodeHostsFile, this.#o.clusterDomain), { mode: 0o644 });
    await chmod(file, 0o644);
    return { hostPath: file, containerPath: etcHostsPath, readOnly: false };
  }

  /**
   * Writes the pod's resolver file, `<rootDir>/pods/<uid>/resolv.conf` (`resolvConfContent`), when
   * its sandbox is created, as a CRI runtime does; empty `content` copies the node's
   * /etc/resolv.conf, as containerd and CRI-O do when the kubelet's settings are all empty.
   */
  async writeResolvConf(pod: Pod, content: string): Promise<void> {
    const uid = pod.metadata?.uid ?? '';
    if (!safeUID.test(uid)) return;
    const file = join(this.podDir(uid), 'resolv.conf');
    await mkdir(this.podDir(uid), { recursive: true });
    const text = content || (await readFile(this.#o.nodeResolvConfFile ?? resolvConfPath, 'utf8').catch(() => ''));
    await writeFile(file, text, { mode: 0o644 });
    await chmod(file, 0o644);
  }

  /**
   * The bind mount of the pod's resolver file over `container`'s /etc/resolv.conf; undefined when
   * the container mounts its own, or when the file was never written (a sandbox created by an
   * older nodelet keeps Docker's file).
   */
  async resolvConfMount(pod: Pod, container: Container): Promise<Mount | undefined> {
    const uid = pod.metadata?.uid ?? '';
    if (!mountsResolvConf(container) || !safeUID.test(uid)) return undefined;
    const file = join(this.podDir(uid), 'resolv.conf');
    if (!(await exists(file))) return undefined;
    return { hostPath: file, containerPath: resolvConfPath, readOnly: false };
  }

  /**
   * Unmounts the pod's subPath mounts and tmpfs volumes and deletes `<rootDir>/pods/<uid>` (its
   * containers are gone). The subPath targets are unmounted and removed without recursion
   * (`cleanSubPaths`, the kubelet's `CleanSubPaths`), and the directory is removed recursively only
   * once nothing at all is mounted below it: `rm -r` through a mount still in place would delete
   * the files it shows, which for a subPath of a hostPath volume are the host's. Throws, leaving
   * the directory, when a mount cannot be taken off.
   */
  async tearDown(uid: string): Promise<void> {
    if (!safeUID.test(uid)) return;
    const state = this.#pods.get(uid);
    this.#pods.delete(uid);
    this.#o.objects?.forgetPodCertificates?.(uid);
    const work = async () => {
      if (!(await exists(this.podDir(uid)))) return;
      // /proc/self/mounts names mount points with symlinks resolved.
      const dir = await realpath(this.podDir(uid));
      await cleanSubPaths(dir);
      await unmountUnder(dir);
      const left = await mountsUnder(dir);
      if (left.length) throw new Error(`not removing ${dir}: still mounted at ${left.join(', ')}`);
      await rm(dir, { recursive: true, force: true });
      this.#o.log.info({ podUID: uid }, 'Tore down pod volumes');
    };
    await (state ? this.#serial(state, work) : work());
  }

  /**
   * One refresh round: adopts volumes of known pods set up before a restart, re-syncs every
   * refreshable volume (failures keep the previous contents and are logged), renews tokens.
   */
  async refresh(): Promise<void> {
    for (const pod of this.#o.listPods?.() ?? []) {
      const uid = pod.metadata?.uid ?? '';
      if (this.#pods.has(uid) || !safeUID.test(uid) || !(await exists(join(this.podDir(uid), 'volumes')))) continue;
      const state = this.#state(pod, this.#o.podInfo?.(pod) ?? { hostIPs: [], podIPs: [], allocatable: { cpuMilli: 0n, memoryBytes: 0n, ephemeralStorageBytes: 0n } });
      for (const v of pod.spec?.volumes ?? []) {
        const k = volumeKindOf(v);
        if ('kind' in k && refreshable.has(k.kind) && (await exists(this.volumeDir(uid, k.kind, v.name)))) state.ready.set(v.name, { kind: k.kind, path: this.volumeDir(uid, k.kind, v.name) });
      }
      this.#o.log.info({ podUID: uid }, 'Adopted pod volumes');
    }
    await Promise.all(
      [...this.#pods].map(([uid, state]) =>
        this.#serial(state, async () => {
          if (this.#pods.get(uid) !== state) return; // torn down meanwhile
          const pod = this.#o.getPod ? this.#o.getPod(uid) : state.pod;
          if (!pod) return;
          state.pod = pod;
          for (const v of pod.spec?.volumes ?? []) {
            const ready = state.ready.get(v.name);
            if (!ready || !refreshable.has(ready.kind)) continue;
            try {
              await this.#sync(uid, state, v, ready.kind, ready.path);
            } catch (err) {
              this.#o.log.warn({ podUID: uid, volume: v.name, error: (err as Error).message }, 'Could not refresh volume; keeping its previous contents');
            }
          }
          state.lastSync = Date.now();
        }),
      ),
    );
  }

  #state(pod: Pod, info: PodRuntimeInfo): PodVolumes {
    const uid = pod.metadata?.uid ?? '';
    let state = this.#pods.get(uid);
    if (!state) {
      state = { pod, info, ready: new Map(), tokens: new Map(), lastSync: Date.now(), queue: Promise.resolve() };
      this.#pods.set(uid, state);
    }
    state.pod = pod;
    state.info = info;
    return state;
  }

  #serial<T>(state: PodVolumes, fn: () => Promise<T>): Promise<T> {
    const run = state.queue.then(fn, fn);
    state.queue = run.catch(() => undefined);
    return run;
  }

  async #setUp(uid: string, state: PodVolumes, v: Volume): Promise<SetUpVolume> {
    const k = volumeKindOf(v);
    if (!('kind' in k)) throw new Error(`${k.unsupported} volumes are not supported by nodelet`);
    const { kind } = k;
    const sc = state.pod.spec?.securityContext;
    if (kind === 'hostPath') {
      await checkHostPath(v.hostPath?.path ?? '', v.hostPath?.type);
      return { kind, path: v.hostPath?.path ?? '' };
    }
    const dir = this.volumeDir(uid, kind, v.name);
    if (kind === 'emptyDir') {
      await this.#setUpEmptyDir(uid, state, v, dir);
      return { kind, path: dir };
    }
    // Read the API objects first: a volume that cannot be filled leaves nothing mounted behind.
    const payload = await this.#payload(state, v, kind);
    const created = (await mkdir(dir, { recursive: true })) !== undefined;
    if (memoryBacked.has(kind) && !(await isMountPoint(dir))) await mountTmpfs(dir, memoryVolumeSize(state.pod, state.info.allocatable.memoryBytes, undefined), 0o1777);
    // The root only: the files get theirs in the atomic writer's fresh directory (#write). These
    // volumes are always mounted read-only, so no container can plant anything in them.
    if (created && sc?.fsGroup !== undefined) await setVolumeOwnership(dir, sc.fsGroup, { readOnly: true, recursive: false });
    await this.#write(uid, state, v, dir, payload);
    return { kind, path: dir };
  }

  /**
   * The kubelet's emptyDir `SetUpAt` (pkg/volume/emptydir/empty_dir.go): a volume with its ready
   * marker, `<rootDir>/pods/<uid>/plugins/kubernetes.io~empty-dir/<name>/ready`, is adopted as it
   * stands (after a nodelet restart too: its containers may have filled it, and nothing in it is
   * walked again). Otherwise the directory gains the bits of 0777 it lacks (`setupDir`: it only
   * adds), a tmpfs is mounted for medium Memory with no `mode` option (`setupTmpfs`), so its root
   * keeps tmpfs's default 1777, sticky bit included; fsGroup ownership (pkg/volume/volume_linux.go
   * `SetVolumeOwnership`, which keeps the bits it finds and adds setgid) is applied while it is
   * still new and empty (no container has mounted it yet), and the marker is written. A
   * memory-backed emptyDir with fsGroup thus shows `dgtrwxrwxrwx` (3777), a disk-backed one 2777.
   */
  async #setUpEmptyDir(uid: string, state: PodVolumes, v: Volume, dir: string): Promise<void> {
    const metaDir = join(this.podDir(uid), 'plugins', pluginDir.emptyDir, v.name);
    const ready = join(metaDir, 'ready');
    const memory = v.emptyDir?.medium === 'Memory';
    if (await exists(ready)) {
      if (memory ? await isMountPoint(dir) : await exists(dir)) return;
      // The volume went away under its marker (a reboot took the tmpfs): set it up afresh.
      await rm(metaDir, { recursive: true, force: true });
    }
    await mkdir(dir, { recursive: true });
    // World-writable, as the kubelet makes it (the umask narrowed mkdir's mode); bits already
    // there (a sticky bit) stay, as `setupDir` only adds the missing ones.
    await chmod(dir, ((await stat(dir)).mode & 0o7777) | 0o777);
    if (memory && !(await isMountPoint(dir))) {
      const sizeLimit = v.emptyDir?.sizeLimit !== undefined ? quantityOf(v.emptyDir.sizeLimit) / 1_000_000_000n : undefined;
      await mountTmpfs(dir, memoryVolumeSize(state.pod, state.info.allocatable.memoryBytes, sizeLimit));
    }
    // sizeLimit on a disk-backed emptyDir is enforced by the eviction manager, which evicts the pod
    // (src/eviction/local-storage.ts), as the kubelet does.
    const sc = state.pod.spec?.securityContext;
    if (sc?.fsGroup !== undefined) await setVolumeOwnership(dir, sc.fsGroup, { readOnly: false, policy: sc.fsGroupChangePolicy });
    await mkdir(metaDir, { recursive: true });
    await writeFile(ready, '');
  }

  /** Re-reads and writes a secret, configMap, downwardAPI or projected volume. */
  async #sync(uid: string, state: PodVolumes, v: Volume, kind: VolumeKind, dir: string): Promise<void> {
    await this.#write(uid, state, v, dir, await this.#payload(state, v, kind));
  }

  /** The current files of a secret, configMap, downwardAPI or projected volume. */
  async #payload(state: PodVolumes, v: Volume, kind: VolumeKind): Promise<Map<string, FileProjection>> {
    const pod = state.pod;
    const ns = pod.metadata?.namespace ?? 'default';
    if (kind === 'secret') {
      const src = v.secret ?? {};
      const name = src.secretName ?? '';
      const secret = await this.#get('secret', ns, name);
      if (!secret && !src.optional) throw new Error(`secret ${JSON.stringify(name)} not found`);
      return secret ? secretPayload(secret, src.items, src.defaultMode ?? DEFAULT_MODE, src.optional === true) : new Map();
    }
    if (kind === 'configMap') {
      const src = v.configMap ?? {};
      const name = src.name ?? '';
      const cm = await this.#get('configmap', ns, name);
      if (!cm && !src.optional) throw new Error(`configmap ${JSON.stringify(name)} not found`);
      return cm ? configMapPayload(cm, src.items, src.defaultMode ?? DEFAULT_MODE, src.optional === true) : new Map();
    }
    if (kind === 'downwardAPI') return downwardAPIPayload(pod, v.downwardAPI?.items, v.downwardAPI?.defaultMode ?? DEFAULT_MODE, state.info);
    return this.#projected(state, v);
  }

  async #write(uid: string, state: PodVolumes, v: Volume, dir: string, payload: Map<string, FileProjection>): Promise<void> {
    const fsGroup = state.pod.spec?.securityContext?.fsGroup;
    const written = await writeAtomically(dir, payload, {
      ...(fsGroup !== undefined ? { setPerms: (ts: string) => setVolumeOwnership(ts, fsGroup, { readOnly: true }) } : {}),
    });
    if (written) this.#o.log.debug({ podUID: uid, volume: v.name, files: payload.size }, 'Wrote volume contents');
  }

  async #projected(state: PodVolumes, v: Volume): Promise<Map<string, FileProjection>> {
    const pod = state.pod;
    const ns = pod.metadata?.namespace ?? 'default';
    const defaultMode = v.projected?.defaultMode ?? DEFAULT_MODE;
    const sc = pod.spec?.securityContext;
    const fsUser = podFsUser(pod);
    const payload = new Map<string, FileProjection>();
    const errors: string[] = [];
    let trustAnchorBytes = 0;
    for (const [sourceIndex, source] of (v.projected?.sources ?? []).entries()) {
      try {
        let part: Map<string, FileProjection> = new Map();
        // kubernetes-types (1.30) predates the field.
        const podCertificate = (source as { podCertificate?: PodCertificateProjection | null }).podCertificate;
        if (source.secret) {
          const { name = '', items, optional = false } = source.secret;
          const secret = await this.#get('secret', ns, name);
          if (!secret && !optional) throw new Error(`secret ${JSON.stringify(name)} not found`);
          if (secret) part = secretPayload(secret, items, defaultMode, optional);
        } else if (source.configMap) {
          const { name = '', items, optional = false } = source.configMap;
          const cm = await this.#get('configmap', ns, name);
          if (!cm && !optional) throw new Error(`configmap ${JSON.stringify(name)} not found`);
          if (cm) part = configMapPayload(cm, items, defaultMode, optional);
        } else if (source.downwardAPI) {
          part = downwardAPIPayload(pod, source.downwardAPI.items, defaultMode, state.info);
        } else if (source.serviceAccountToken) {
          const tp = source.serviceAccountToken;
          const token = await this.#token(state, `${v.name}/${tp.path}`, tp.audience, tp.expirationSeconds ?? 3600);
          // The kubelet narrows the token to its owner when fsUser or fsGroup decide who reads it.
          const mode = fsUser !== undefined || sc?.fsGroup !== undefined ? 0o600 : defaultMode;
          part.set(tp.path, { data: token, mode, ...(fsUser !== undefined ? { fsUser } : {}) });
        } else if (source.clusterTrustBundle) {
          const ctb = source.clusterTrustBundle;
          const anchors = await this.#trustAnchors(ctb);
          trustAnchorBytes += Buffer.byteLength(anchors);
          if (trustAnchorBytes > MAX_TRUST_ANCHORS_BYTES_PER_VOLUME) {
            throw new Error(`clusterTrustBundle ${JSON.stringify(ctb.path)}: the volume's trust anchors exceed the ${MAX_TRUST_ANCHORS_BYTES_PER_VOLUME} bytes nodelet projects into one volume`);
          }
          // As for tokens: the kubelet narrows the file to its owner when fsUser or fsGroup decide who reads it.
          const mode = fsUser !== undefined || sc?.fsGroup !== undefined ? 0o600 : defaultMode;
          part.set(ctb.path, { data: anchors, mode, ...(fsUser !== undefined ? { fsUser } : {}) });
        } else if (podCertificate) {
          // projected.go: the key and chain the pod certificate manager holds, or its error
          // (not issued yet, denied, failed) so the pod waits; mode narrowed as for tokens.
          const objects = this.#o.objects;
          if (!objects) throw new Error(needsClusterMode('podCertificate'));
          if (!objects.getPodCertificateCredentialBundle) throw new Error('podCertificate projection is not supported by this object source');
          const bundle = await objects.getPodCertificateCredentialBundle(pod, v.name, sourceIndex, podCertificate);
          const mode = fsUser !== undefined || sc?.fsGroup !== undefined ? 0o600 : defaultMode;
          part = podCertificateFiles(podCertificate, bundle, mode, fsUser);
        }
        for (const [path, file] of part) payload.set(path, file);
      } catch (err) {
        errors.push((err as Error).message);
      }
    }
    if (errors.length) throw new Error(errors.length === 1 ? errors[0] : `[${errors.join(', ')}]`);
    return payload;
  }

  /**
   * A `clusterTrustBundle` source's file (pkg/volume/projected/projected.go `collectData`): by
   * `name`, else by `signerName` and `labelSelector`; `optional` lets nothing be found (the file
   * is then empty) but hides no other failure (an apiserver that refuses, an informer not synced).
   */
  async #trustAnchors(ctb: ClusterTrustBundleProjection): Promise<string> {
    const objects = this.#o.objects;
    if (!objects) throw new Error(needsClusterMode('clusterTrustBundle'));
    const allowEmpty = ctb.optional === true;
    if (ctb.name !== undefined && ctb.name !== null) {
      if (!objects.getTrustAnchorsByName) throw new Error('ClusterTrustBundle projection is not supported by this object source');
      return objects.getTrustAnchorsByName(ctb.name, allowEmpty);
    }
    if (ctb.signerName !== undefined && ctb.signerName !== null) {
      if (!objects.getTrustAnchorsBySigner) throw new Error('ClusterTrustBundle projection is not supported by this object source');
      return objects.getTrustAnchorsBySigner(ctb.signerName, ctb.labelSelector ?? undefined, allowEmpty);
    }
    throw new Error('ClusterTrustBundle projection requires either name or signerName to be set');
  }

  async #get(kind: 'secret', ns: string, name: string): Promise<Secret | undefined>;
  async #get(kind: 'configmap', ns: string, name: string): Promise<ConfigMap | undefined>;
  async #get(kind: 'secret' | 'configmap', ns: string, name: string): Promise<unknown> {
    const objects = this.#o.objects;
    if (!objects) throw new Error(needsClusterMode(`${kind} ${JSON.stringify(name)}`));
    return kind === 'secret' ? objects.getSecret(ns, name) : objects.getConfigMap(ns, name);
  }

  /** A bound service-account token for the pod, requested again when `tokenNeedsRefresh` says so. */
  async #token(state: PodVolumes, key: string, audience: string | undefined, expirationSeconds: number): Promise<string> {
    const objects = this.#o.objects;
    if (!objects) throw new Error(needsClusterMode('serviceAccountToken'));
    const now = this.#o.now?.() ?? Date.now();
    const cached = state.tokens.get(key);
    if (cached && !tokenNeedsRefresh(cached, now, Math.random() * 10_000)) return cached.token;
    const pod = state.pod;
    const sa = pod.spec?.serviceAccountName || pod.spec?.serviceAccount || 'default';
    try {
      const tr = await objects.requestServiceAccountToken(pod, sa, { ...(audience ? { audience } : {}), expirationSeconds });
      state.tokens.set(key, { token: tr.token, expirationTimestamp: tr.expirationTimestamp, expirationSeconds });
      return tr.token;
    } catch (err) {
      // A token that is still valid serves until the apiserver answers again.
      if (cached && cached.expirationTimestamp.getTime() > now) {
        this.#o.log.warn({ podUID: pod.metadata?.uid, error: (err as Error).message }, 'Could not renew service account token; keeping the current one');
        return cached.token;
      }
      throw new Error(`failed to fetch token: ${(err as Error).message}`);
    }
  }

  /**
   * A subPath's bind-mount target (the kubelet's `makeMounts` with `SafeMakeDir` and
   * `PrepareSafeSubpath`): the subPath is created first when missing, unless the volume is
   * read-only by type. Refusals carry the kubelet's texts and name only what the user gave;
   * host paths go to nodelet's log. Runs in the pod's queue, never beside its teardown.
   */
  async #subPath(uid: string, state: PodVolumes, vol: SetUpVolume, subPath: string, mountName: string, containerName: string, index: number): Promise<string> {
    const refusal = subPathRefusal(subPath);
    if (refusal) throw new ContainerConfigError(refusal);
    const fail = (what: string, err: unknown): never => {
      this.#o.log.warn({ podUID: uid, container: containerName, volumeMount: mountName, error: (err as Error).message }, `Failed to ${what} for volumeMount of the container`);
      const message = `failed to ${what} for volumeMount ${JSON.stringify(mountName)} of container ${JSON.stringify(containerName)}`;
      throw new ContainerConfigError(err instanceof SubPathError ? `${message}: ${err.reason}` : message);
    };
    return this.#serial(state, async () => {
      if (this.#pods.get(uid) !== state) throw new ContainerConfigError(`volumeMount ${JSON.stringify(mountName)}: volume is not set up`, { mount: true });
      // As the kubelet's PathExists, following symlinks: what one points to is checked when bound.
      if (!alwaysReadOnly.has(vol.kind) && !(await stat(join(vol.path, subPath)).then(() => true, () => false))) {
        try {
          const base = await realpath(vol.path);
          await safeMakeDir(base, subPath, (await stat(base)).mode & 0o7777);
        } catch (err) {
          fail('create subPath directory', err);
        }
      }
      const podDir = this.podDir(uid);
      try {
        await mkdir(podDir, { recursive: true });
        return await bindSubPath({ volumePath: vol.path, subPath, podDir, volumeName: mountName, containerName, mountIndex: index });
      } catch (err) {
        return fail('prepare subPath', err);
      }
    });
  }
}

async function exists(path: string): Promise<boolean> {
  return lstat(path).then(() => true, () => false);
}

/** The effective `runAsUser` when every container shares it (the kubelet's `FsUserFrom`), which owns tokens. */
export function podFsUser(pod: Pod): number | undefined {
  const containers = [...(pod.spec?.initContainers ?? []), ...(pod.spec?.containers ?? [])];
  const users = new Set(containers.map((c) => c.securityContext?.runAsUser ?? pod.spec?.securityContext?.runAsUser));
  const [only] = users;
  return users.size === 1 && only !== undefined ? only : undefined;
}

/**
 * Size of a memory-backed volume (`calculateEmptyDirMemorySize`): the node's allocatable
 * memory, lowered to the pod's memory limit when every container has one, lowered to the
 * volume's `sizeLimit` when that is smaller still.
 */
export function memoryVolumeSize(pod: Pod, allocatableBytes: bigint, sizeLimitBytes: bigint | undefined): bigint {
  let size = allocatableBytes;
  const limit = podMemoryLimit(pod);
  if (limit !== undefined && limit > 0n && (size <= 0n || limit <= size)) size = limit;
  if (sizeLimitBytes !== undefined && sizeLimitBytes > 0n && (size <= 0n || sizeLimitBytes <= size)) size = sizeLimitBytes;
  return size;
}

function podMemoryLimit(pod: Pod): bigint | undefined {
  const bytes = (c: Container) => (c.resources?.limits?.memory !== undefined ? quantityOf(c.resources.limits.memory) / 1_000_000_000n : undefined);
  const regular = pod.spec?.containers ?? [];
  const init = pod.spec?.initContainers ?? [];
  const all = [...regular, ...init].map(bytes);
  if (all.some((b) => b === undefined)) return undefined;
  const sum = regular.map(bytes).reduce<bigint>((a, b) => a + (b ?? 0n), 0n);
  const maxInit = init.map(bytes).reduce<bigint>((a, b) => ((b ?? 0n) > a ? (b ?? 0n) : a), 0n);
  return sum > maxInit ? sum : maxInit;
}
