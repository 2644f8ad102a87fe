import type Docker from 'dockerode';
import type { RuntimeContainer, RuntimePod, RuntimeSandbox } from '../types.js';
import { statusCodeOf } from './client.js';
import { DockerType, Label } from './labels.js';
import { parseContainerName, type ParsedName } from './naming.js';
import { containerFromInspect, containerFromListEntry, sandboxFromInspect, sandboxFromListEntry } from './state.js';
import type { InspectCache } from './inspect-cache.js';
import { readTerminationMessage } from './termination-message.js';
import { usesHostNetwork } from './pod-network.js';
import type { DockerSandboxes } from './sandbox.js';

/**
 * The relist: this node's containers grouped into pods, each sandbox and container newest first,
 * as cri-dockerd's `core/container_list.go` (`ListContainers`) and `core/sandbox_list.go`
 * (`ListPodSandbox`) list them for the kubelet's PLEG. It lists containers by this node's label
 * and inspects only those whose Docker state changed since the last listing, or that an event may
 * have changed since their last inspection (inspect-cache.ts), so a relist of an idle node costs
 * one API call; an inspect too slow is answered from the list and the last inspection.
 */

export interface PodListerOptions {
  docker: Docker;
  nodeName: string;
  inspections: InspectCache;
  /** A sandbox's IPs from its pod network, and the network GC after each listing (sandbox.ts). */
  sandboxes: Pick<DockerSandboxes, 'withNetworkIPs' | 'maybeCollectNetwork'>;
}

/** How long a relist waits for one container's inspect before reporting it from its list entry. */
const INSPECT_WAIT_MS = 250;
const SLOW = Symbol('slow inspect');

export class PodLister {
  readonly #docker: Docker;
  readonly #opts: PodListerOptions;
  readonly #inspections: InspectCache;
  /** Inspections in flight and the tick each was asked at, shared by relists (one per container at a time). */
  readonly #inspecting = new Map<string, { seq: number; answer: Promise<Docker.ContainerInspectInfo | undefined> }>();

  constructor(opts: PodListerOptions) {
    this.#docker = opts.docker;
    this.#opts = opts;
    this.#inspections = opts.inspections;
  }

  async listPods(): Promise<RuntimePod[]> {
    const listedAt = performance.now();
    const listedTick = this.#inspections.next();
    const list = await this.#docker.listContainers({ all: true, filters: { label: [`${Label.node}=${this.#opts.nodeName}`] } });
    const seen = new Set<string>();
    const pods = new Map<string, { uid: string; name: string; namespace: string; sandboxes: RuntimeSandbox[]; containers: RuntimeContainer[] }>();
    await Promise.all(
      list.map(async (entry) => {
        seen.add(entry.Id);
        const parsed = entry.Names.map(parseContainerName).find((n): n is ParsedName => n !== undefined);
        const uid = entry.Labels[Label.podUID];
        if (!parsed || !uid) return;
        // A container nodelet is starting now: its inspection would wait for the start to end.
        const starting = entry.State === 'created' && entry.Names.some((n) => this.#inspections.isStarting(n.replace(/^\//, '')));
        const info = starting ? SLOW : await this.#inspect(entry.Id, entry.State);
        if (!info) return;
        let pod = pods.get(uid);
        if (!pod) {
          pod = { uid, name: entry.Labels[Label.podName] ?? parsed.pod, namespace: entry.Labels[Label.podNamespace] ?? parsed.namespace, sandboxes: [], containers: [] };
          pods.set(uid, pod);
        }
        const sandbox = entry.Labels[Label.dockerType] === DockerType.sandbox;
        if (info === SLOW) {
          // Busy in Docker, or being started by nodelet: report what the list and the last
          // inspection say; the inspection still running answers the next listing. The
          // inspection only while the list still shows a state it saw: a container
          // the list shows exited since (it died, or the engine stopped it as it restarted) is
          // reported from its list entry, never as still running from an older inspection.
          const last = this.#inspections.last(entry.Id);
          const cached = last && (last.listedState === entry.State || last.status === entry.State) ? last.info : undefined;
          if (sandbox) pod.sandboxes.push(this.#opts.sandboxes.withNetworkIPs(cached ? sandboxFromInspect(cached, parsed) : sandboxFromListEntry(entry, parsed), entry.HostConfig?.NetworkMode === 'host'));
          else pod.containers.push(cached ? containerFromInspect(cached, parsed) : containerFromListEntry(entry, parsed));
        } else if (sandbox) pod.sandboxes.push(this.#opts.sandboxes.withNetworkIPs(sandboxFromInspect(info, parsed), usesHostNetwork(info)));
        else {
          // The kubelet reports the container's own message over the runtime's error text.
          const message = this.#inspections.last(entry.Id)?.terminationMessage;
          const container = containerFromInspect(info, parsed);
          pod.containers.push(message !== undefined ? { ...container, message } : container);
        }
      }),
    );
    this.#inspections.retain(seen, listedTick);
    this.#opts.sandboxes.maybeCollectNetwork(list.filter((e) => e.Labels[Label.dockerType] === DockerType.sandbox).map((e) => e.Id), listedAt);
    const byNewest = (a: { attempt: number; createdAt: Date }, b: { attempt: number; createdAt: Date }) =>
      b.attempt - a.attempt || b.createdAt.getTime() - a.createdAt.getTime();
    return [...pods.values()].map((p) => ({ ...p, sandboxes: p.sandboxes.sort(byNewest), containers: p.containers.sort(byNewest) }));
  }

  /**
   * Inspects a container unless its cached inspection still holds (`InspectCache.fresh`).
   * Docker holds a container's lock while it creates, starts or stops it, and an inspect waits
   * for that lock: during a burst of starts, or a graceful stop, one inspect can take seconds.
   * So an inspect slower than INSPECT_WAIT_MS answers SLOW and keeps running in the background
   * (its answer fills the cache); the relist goes on without it and the next one uses that
   * answer, or waits for it again — one busy container never holds back every pod's status. An
   * inspection in flight is shared unless an event came after it was asked.
   */
  async #inspect(id: string, listedState: string): Promise<Docker.ContainerInspectInfo | undefined | typeof SLOW> {
    const cached = this.#inspections.fresh(id, listedState);
    if (cached) return cached.info;
    let pending = this.#inspecting.get(id);
    if (!pending || !this.#inspections.current(id, pending.seq)) {
      const seq = this.#inspections.next();
      const answer = this.#docker
        .getContainer(id)
        .inspect()
        .then(
          async (info) => {
            await rememberInspection(this.#docker, this.#inspections, id, listedState, info, seq);
            return info;
          },
          (err: unknown) => {
            if (statusCodeOf(err) === 404) return undefined; // removed between list and inspect
            throw err;
          },
        )
        .finally(() => {
          if (this.#inspecting.get(id)?.answer === answer) this.#inspecting.delete(id);
        });
      pending = { seq, answer };
      this.#inspecting.set(id, pending);
    }
    const { answer: inFlight } = pending;
    let timer: NodeJS.Timeout | undefined;
    const slow = new Promise<typeof SLOW>((resolve) => {
      timer = setTimeout(() => resolve(SLOW), INSPECT_WAIT_MS);
    });
    try {
      const answer = await Promise.race([inFlight, slow]);
      if (answer === SLOW) inFlight.catch(() => undefined);
      return answer;
    } finally {
      clearTimeout(timer);
    }
  }
}

/** Caches an inspection asked at tick `seq` (with an exited container's termination message). */
export async function rememberInspection(docker: Docker, inspections: InspectCache, id: string, listedState: string, info: Docker.ContainerInspectInfo, seq: number): Promise<void> {
  const exited = !info.State.Running && info.State.FinishedAt !== '' && !info.State.FinishedAt.startsWith('0001-');
  const terminationMessage = exited && info.Config.Labels?.[Label.dockerType] !== DockerType.sandbox ? await readTerminationMessage(docker, info) : undefined;
  inspections.remember(id, { listedState, status: info.State.Status || listedState, info, seq, ...(terminationMessage !== undefined ? { terminationMessage } : {}) });
}
