/**
 * The sandbox part of the kubelet's start path (pkg/kubelet/kuberuntime/kuberuntime_manager.go
 * `SyncPod`, kuberuntime_sandbox.go `createPodSandbox`): a pod's refusals before a sandbox exists,
 * the runtime network's readiness, the sandbox config (`generatePodSandboxConfig`), the pod cgroup
 * (`EnsureExists`) and the OOM score, and the sandbox's start time. The pod cgroup and OOM score
 * serve the containers' starts too (start.ts `PodStarter`, which owns one of these).
 */
import type { Container, Pod } from '../api/types.js';
import type { Logger } from '../logging/index.js';
import type { RuntimePod, RuntimeSandbox } from '../runtime/types.js';
import { POD_INFRA_OOM_ADJ, settableOOMScore } from '../cgroups/oom-score.js';
import { readsPodIP } from '../volumes/downward-api.js';
import type { ContainerStart, Waiting } from './pod-actions.js';
import { podSandboxConfig } from './sandbox-config.js';
import { sandboxRefusal } from './security-context.js';
import type { PodStarterOptions } from './start.js';
import { unsupportedFieldRefusal } from './unsupported.js';

/** The kubelet's `NetworkNotReadyErrorMsg` (pkg/kubelet/kubelet.go). */
const NETWORK_NOT_READY = 'network is not ready';
/** How soon a pod held by a not-ready network is synced again (the plugin re-reads its config every 5 s). */
const NETWORK_NOT_READY_RETRY_MS = 2000;

/** Creates pods' sandboxes, and makes their pod cgroups and OOM scores, for a `PodStarter`. */
export class SandboxStarter {
  readonly #o: PodStarterOptions;
  /** The starter's record of a failed start (`CreateContainerConfigError` for a pod refused here). */
  readonly #startFailed: (pod: Pod, container: Container, failed: Waiting) => void;

  constructor(opts: PodStarterOptions, startFailed: (pod: Pod, container: Container, failed: Waiting) => void) {
    this.#o = opts;
    this.#startFailed = startFailed;
  }

  /**
   * `SyncPod`'s sandbox part: a new sandbox (attempt `attempt`) for `pod`, or undefined when none
   * was made and nothing starts this sync — the pod is refused before a sandbox exists (its
   * `starts` wait with `CreateContainerConfigError`), the runtime's network is not ready (tried
   * again in 2 s), or the creation failed (`FailedCreatePodSandBox`, held by the sandbox back-off).
   * `onCreated` is the runtime's (`SandboxConfig.onCreated`): the sandbox exists, not yet started.
   */
  async createSandbox(pod: Pod, runtimePod: RuntimePod | undefined, attempt: number, starts: readonly ContainerStart[], plog: Logger, onCreated?: (sandboxId: string) => void): Promise<RuntimeSandbox | undefined> {
    const { runtime, record } = this.#o;
    const refusal = sandboxRefusal(pod) ?? unsupportedFieldRefusal(pod, runtime.networkStatus());
    if (refusal) {
      // Refused before a sandbox exists (user namespaces, fields nodelet cannot apply): nothing is created.
      plog.warn({ reason: refusal.reason }, refusal.message);
      record(pod, 'Warning', refusal.reason, refusal.message);
      for (const s of starts) this.#startFailed(pod, s.container, { reason: 'CreateContainerConfigError', message: refusal.message });
      return undefined;
    }
    if (!pod.spec?.hostNetwork) {
      const { readiness } = runtime.networkStatus();
      if (!readiness.ready) {
        // The kubelet's syncPod: no pod-network sandbox while the runtime's network is not ready
        // (host-network pods still start); tried again once the plugin may have loaded a config.
        const message = `${NETWORK_NOT_READY}: container runtime network not ready: NetworkReady=false reason:${readiness.reason} message:docker: network plugin is not ready: ${readiness.message}`;
        plog.warn({ reason: readiness.reason }, message);
        record(pod, 'Warning', 'NetworkNotReady', message);
        this.#o.scheduleAfter(pod.metadata?.uid ?? '', NETWORK_NOT_READY_RETRY_MS);
        return undefined;
      }
    }
    try {
      plog.info({ attempt }, 'Creating pod sandbox');
      const cgroupParent = await this.podCgroup(pod);
      const podStartTime = this.#podStartTime(pod, runtimePod);
      const { id, ips } = await runtime.runSandbox(pod, attempt, { ...(await this.#sandboxConfig(pod)), ...cgroupParent, ...this.oomScore(POD_INFRA_OOM_ADJ), podStartTime, ...(onCreated ? { onCreated } : {}) });
      this.#o.metrics?.startedPods.inc();
      this.#o.failures.sandboxCreated(pod.metadata?.uid ?? '');
      if (attempt > 0) record(pod, 'Normal', 'SandboxChanged', 'Pod sandbox changed, it will be killed and re-created.');
      let sandbox: RuntimeSandbox = { id, attempt, ready: true, createdAt: new Date(), podStartTime, ips };
      if (!ips.length && readsPodIP(pod) && !pod.spec?.hostNetwork) {
        // The downward API needs the new sandbox's IP before the containers are configured: on a
        // Docker network (`--pod-network`) it is Docker's, read back by a relist.
        await this.#o.pods.relist();
        sandbox = this.#o.pods.getPod(pod.metadata?.uid ?? '')?.sandboxes.find((s) => s.id === id) ?? sandbox;
      }
      return sandbox;
    } catch (err) {
      this.#o.metrics?.startedPodErrors.inc();
      const message = `Failed to create pod sandbox: ${(err as Error).message}`;
      plog.warn({ err }, 'Failed to create pod sandbox');
      record(pod, 'Warning', 'FailedCreatePodSandBox', message);
      const uid = pod.metadata?.uid ?? '';
      this.#o.scheduleAfter(uid, this.#o.failures.sandboxFailed(uid, { reason: 'ContainerCreating', message }, Date.now()));
      // No runtime change may follow (no PLEG event): one more sync publishes the failure now.
      this.#o.schedule(uid);
      return undefined;
    }
  }

  /**
   * The pod's start time to record on a new sandbox: the one already reported (the status
   * manager's, or the source's — a mirror or apiserver pod — or an older sandbox's), else now,
   * the kubelet's choice for a pod's first status (pkg/kubelet/status/status_manager.go
   * `updateStatusInternal`).
   */
  #podStartTime(pod: Pod, runtimePod: RuntimePod | undefined): Date {
    const reported = this.#o.status.getPodStatus(pod.metadata?.uid ?? '')?.startTime ?? pod.status?.startTime;
    const oldest = runtimePod?.sandboxes.at(-1);
    const at = reported ? new Date(reported) : (oldest?.podStartTime ?? oldest?.createdAt);
    return at && !Number.isNaN(at.getTime()) ? at : new Date();
  }

  /**
   * The pod's cgroup, made or brought up to date (the kubelet's `EnsureExists` in `SyncPod`), as
   * the engine's `CgroupParent`; nothing where pods have none. Pod-level `spec.resources` are the
   * pod cgroup's limits and nothing else, so a pod with them is refused where there is none.
   */
  async podCgroup(pod: Pod): Promise<{ cgroupParent?: string }> {
    const parent = await this.#o.podCgroups?.ensurePod(pod);
    if (parent === undefined && pod.spec?.resources && (Object.keys(pod.spec.resources.limits ?? {}).length || Object.keys(pod.spec.resources.requests ?? {}).length)) {
      throw new Error('pod-level resources (spec.resources) are applied to the pod\'s own cgroup, and pods on this node have none (cgroupsPerQOS is off or unavailable: see nodelet\'s log)');
    }
    if (parent !== undefined) this.#o.podCgroupMade?.(pod);
    return parent === undefined ? {} : { cgroupParent: parent };
  }

  /** `OomScoreAdj` as this host can set it (see `settableOOMScore`); nothing without `oomScores`. */
  oomScore(score: number): { oomScoreAdj?: number } {
    const o = this.#o.oomScores;
    return o ? { oomScoreAdj: settableOOMScore(score, o.canLower) } : {};
  }

  /** Hostname and DNS of a new sandbox (`generatePodSandboxConfig`); its errors fail the sandbox. */
  #sandboxConfig(pod: Pod): ReturnType<typeof podSandboxConfig> {
    const { record, nodeIP, nodeSubject } = this.#o;
    const dns = this.#o.dns ?? { clusterDNS: [], clusterDomain: '', resolvConf: '/etc/resolv.conf' };
    return podSandboxConfig(pod, {
      dns: { ...dns, nodeIPs: nodeIP ? [nodeIP] : [] },
      volumes: this.#o.volumes,
      warn: (on, reason, message) => record(on === 'node' ? nodeSubject : pod, 'Warning', reason, message),
    });
  }
}
