import type Docker from 'dockerode';
import type { Container, Pod } from '../../api/types.js';
import type { Logger } from '../../logging/index.js';
import type { ContainerConfig, RuntimeSandbox } from '../types.js';
import type { NetworkPlugin } from '../../network/types.js';
import { UpdateUnsupportedError } from '../update-unsupported.js';
import { createContainerOptions, statusCodeOf } from './client.js';
import { makeContainerName } from './naming.js';
import type { InspectCache } from './inspect-cache.js';
import type { NetnsDialers } from './netns-dialer.js';
import { dockerSecurity } from './security.js';
import { PrivilegedMode } from './privileged.js';
import { logConfig, type ContainerLogRotation } from './log-config.js';
import { containerCreateConfig, containerResourceConfig } from './container-config.js';
import type { EngineDetection } from './engine.js';

/**
 * An app container's lifecycle on the engine: created (its body from container-config.ts, asked
 * again without a capability the engine refuses) and started, stopped, removed, and resized in
 * place; every step that changes what an inspection says tells the inspect cache. Mirrors
 * cri-dockerd's `core/container_create.go`, `container_start.go`, `container_stop.go`,
 * `container_remove.go` and `container_update_resources.go`.
 */

export interface DockerContainersOptions {
  docker: Docker;
  nodeName: string;
  /** The node's log rotation for every container (log-config.ts). */
  containerLogs?: ContainerLogRotation;
  network?: NetworkPlugin;
  log: Logger;
  inspections: InspectCache;
  engine: EngineDetection;
  /** Port-forward helpers: a sandbox's would hold its network namespace open (netns-dialer.ts). */
  dialers: NetnsDialers;
  /** DEL of a sandbox's pod network (sandbox.ts). */
  tearDownNetwork(id: string): Promise<void>;
}

export class DockerContainers {
  readonly #docker: Docker;
  readonly #opts: DockerContainersOptions;
  readonly #inspections: InspectCache;
  /** `Privileged` as this host can grant it (privileged.ts). */
  readonly #privileged: PrivilegedMode;
  /** Names of the containers `createContainer` made and `startCreatedContainer` has not started (nor `removeContainer` removed), by ID. */
  readonly #created = new Map<string, string>();

  constructor(opts: DockerContainersOptions) {
    this.#docker = opts.docker;
    this.#opts = opts;
    this.#inspections = opts.inspections;
    this.#privileged = new PrivilegedMode(opts.log);
  }

  async startContainer(pod: Pod, container: Container, sandbox: RuntimeSandbox, attempt: number, config: ContainerConfig): Promise<string> {
    const id = await this.createContainer(pod, container, sandbox, attempt, config);
    await this.startCreatedContainer(id);
    return id;
  }

  /**
   * Creates an app container (cri-dockerd `CreateContainer`); the engine only needs its sandbox to
   * exist (`container:<id>` namespaces are joined at the start). Until it is started or removed,
   * listings report it from the list (the inspect cache's `startingNow`).
   */
  async createContainer(pod: Pod, container: Container, sandbox: RuntimeSandbox, attempt: number, config: ContainerConfig): Promise<string> {
    const meta = pod.metadata ?? {};
    const name = makeContainerName(container.name, { pod: meta.name ?? '', namespace: meta.namespace ?? '', uid: meta.uid ?? '' }, attempt);
    this.#inspections.startingNow(name);
    try {
      const id = await this.#createContainer(pod, container, sandbox, { name, attempt }, config);
      this.#created.set(id, name);
      return id;
    } catch (err) {
      this.#inspections.started(name);
      throw err;
    }
  }

  /** Starts a container `createContainer` made (cri-dockerd `StartContainer`). */
  async startCreatedContainer(id: string): Promise<void> {
    try {
      await this.start(this.#docker.getContainer(id));
    } finally {
      this.#settled(id);
    }
  }

  #settled(id: string): void {
    const name = this.#created.get(id);
    if (name === undefined) return;
    this.#created.delete(id);
    this.#inspections.started(name);
  }

  async #createContainer(pod: Pod, container: Container, sandbox: RuntimeSandbox, { name, attempt }: { name: string; attempt: number }, config: ContainerConfig): Promise<string> {
    const security = dockerSecurity(config.security);
    const ulimits = await this.#opts.engine.ulimitsConfig();
    const engine = (await this.#opts.engine.detect()).engine.name;
    const create = async () => this.#docker.createContainer(createContainerOptions(name, containerCreateConfig(pod, container, config, {
      nodeName: this.#opts.nodeName,
      sandbox,
      attempt,
      user: security.User,
      securityHostConfig: await this.#privileged.hostConfig(security.HostConfig, engine),
      ulimits,
      logConfig: logConfig(engine, this.#opts.containerLogs),
    })));
    for (;;) {
      try {
        return (await create()).id;
      } catch (err) {
        // A capability the engine does not know (privileged.ts): asked again without it.
        if (!this.#privileged.refused(err)) throw err;
      }
    }
  }

  /** Starts a container nodelet just created (an app container, or a sandbox: sandbox.ts). */
  async start(container: Docker.Container): Promise<void> {
    try {
      await container.start();
    } catch (err) {
      // Keep the failed container: its ContainerCannotRun state is what the status reports, so
      // no inspection asked before the failure may stand for it.
      this.#inspections.forget(container.id);
      this.#inspections.changed(container.id);
      throw err;
    }
  }

  async stopContainer(id: string, graceSeconds: number): Promise<void> {
    // A sandbox's port-forward helper would hold its network namespace open.
    this.#opts.dialers.release(id);
    try {
      await this.#docker.getContainer(id).stop({ t: Math.max(0, Math.floor(graceSeconds)) });
    } catch (err) {
      const code = statusCodeOf(err);
      if (code !== 304 && code !== 404) throw err;
    }
  }

  async removeContainer(id: string): Promise<void> {
    this.#opts.dialers.release(id);
    this.#settled(id);
    // A sandbox removed without a stop first (a dead one, or garbage) still holds its network.
    if (this.#opts.network?.podNetworkStatus(id)) await this.#opts.tearDownNetwork(id);
    try {
      await this.#docker.getContainer(id).remove({ force: true, v: true });
    } catch (err) {
      const code = statusCodeOf(err);
      // 409: removal already in progress.
      if (code !== 404 && code !== 409) throw err;
    }
    this.#inspections.forget(id);
  }

  /**
   * An in-place resize (`POST /containers/{id}/update`, the CRI's `UpdateContainerResources`):
   * the same `CpuShares`, `NanoCpus` and `Memory` its creation set from the spec, and
   * `MemorySwap` at twice the memory limit — the engine's default for a container created with a
   * limit and no swap setting, which it also requires to stay at or above the new limit. The next
   * listing inspects the container again, so the values read back are the engine's.
   */
  async updateContainerResources(containerId: string, container: Container): Promise<void> {
    const resources = containerResourceConfig(container);
    const update = { ...resources, ...(resources.Memory ? { MemorySwap: resources.Memory * 2 } : {}) };
    try {
      await this.#docker.getContainer(containerId).update(update);
    } catch (err) {
      // 404 for a container that exists: the engine has no such endpoint (Podman before its
      // compat update), not a missing container.
      if (statusCodeOf(err) === 404 && (await this.#docker.getContainer(containerId).inspect().then(() => true, () => false))) {
        const engine = this.#opts.engine.current;
        throw new UpdateUnsupportedError(`the container engine${engine ? ` (${engine.name} ${engine.version})` : ''} has no container update (POST /containers/{id}/update answered 404): in-place resize is not supported on it`, { cause: err });
      }
      throw err;
    } finally {
      this.#inspections.changed(containerId);
    }
  }
}
