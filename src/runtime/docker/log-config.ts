import type Docker from 'dockerode';
import { quantityOf } from '../../api/quantity.js';
import type { EngineName } from './engine.js';

/** The node's log rotation for every container (`containerLogMaxSize`, `containerLogMaxFiles`). */
export interface ContainerLogRotation {
  readonly maxSizeBytes: number;
  readonly maxFiles: number;
}

/**
 * `containerLogMaxSize` (a quantity, checked by config) in whole bytes, rounded up; at least 1 KiB,
 * since a file rotated after every line would lose lines to a follower. Throws with the reason.
 */
export function containerLogMaxSizeBytes(text: string): number {
  const bytes = (quantityOf(text) + 999_999_999n) / 1_000_000_000n;
  if (bytes < 1024n) throw new Error(`--container-log-max-size ${text}: must be at least 1Ki`);
  if (bytes > BigInt(Number.MAX_SAFE_INTEGER)) throw new Error(`--container-log-max-size ${text}: too large`);
  return Number(bytes);
}

/**
 * A container's `HostConfig.LogConfig` for the node's log rotation: Docker's json-file driver with
 * `max-size` (bytes) and `max-file` (moby daemon/logger/jsonfilelog); a follow across a rotation
 * reads the files themselves (log-files.ts), since the engine's follow loses lines there. The kubelet
 * rotates a CRI runtime's log files itself (pkg/kubelet/logs/container_log_manager.go); with Docker
 * the engine owns the files, so the engine rotates them. Podman's compatibility API has no
 * `max-file` for its k8s-file driver: there the engine's own settings (containers.conf
 * `log_size_max`) apply.
 */
export function logConfig(engine: EngineName, logs: ContainerLogRotation | undefined): { LogConfig?: Docker.HostConfig['LogConfig'] } {
  if (!logs || engine !== 'docker') return {};
  return { LogConfig: { Type: 'json-file', Config: { 'max-size': String(logs.maxSizeBytes), 'max-file': String(logs.maxFiles) } } };
}

