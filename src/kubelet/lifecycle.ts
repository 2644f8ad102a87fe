import { mkdir, open } from 'node:fs/promises';
import { join } from 'node:path';
import type { Container, LifecycleHandler, Pod } from 'kubernetes-types/core/v1.js';
import type { Mount } from '../runtime/types.js';
import { httpProtocolRefusal, runProbe, type ProbeIO } from './prober/handlers.js';

/** The kubelet's default `terminationMessagePath`. */
export const DEFAULT_TERMINATION_MESSAGE_PATH = '/dev/termination-log';

/**
 * The host file behind a container instance's `terminationMessagePath`
 * (`<root>/pods/<uid>/containers/<name>/<attempt>`, the kubelet's layout), created empty and
 * world-writable so any container user can write its message, and mounted read-write. The
 * runtime reads it back once the container has exited. Removed with the pod's directory.
 */
export async function terminationLogMount(rootDir: string, pod: Pod, container: Container, attempt: number): Promise<Mount> {
  const dir = join(rootDir, 'pods', pod.metadata?.uid ?? '', 'containers', container.name);
  await mkdir(dir, { recursive: true });
  const hostPath = join(dir, String(attempt));
  const file = await open(hostPath, 'w', 0o666);
  await file.chmod(0o666);
  await file.close();
  return { hostPath, containerPath: container.terminationMessagePath || DEFAULT_TERMINATION_MESSAGE_PATH, readOnly: false };
}

/**
 * Why the container is refused (`CreateContainerConfigError`, before it is created) for one of its
 * hooks: an `httpGet.protocol` other than `HTTP1` (the alpha H2CContainerProbe of 1.37, dropped by
 * the apiserver while its gate is off). The kubelet's hooks (pkg/kubelet/lifecycle/handlers.go)
 * never read the field and speak HTTP/1.1, as nodelet's do; a hook asking for HTTP2 is refused
 * rather than run over HTTP/1.1.
 */
export function hookRefusal(container: Container): string | undefined {
  for (const hook of ['postStart', 'preStop'] as const) {
    const why = httpProtocolRefusal(container.lifecycle?.[hook]?.httpGet);
    if (why) return `lifecycle.${hook}.httpGet: ${why}`;
  }
  return undefined;
}

/** The longest a hook may run when nothing else bounds it (postStart has no timeout of its own). */
const MAX_HOOK_MS = 120_000;

/**
 * Resolves once at least `ms` have passed by `Date.now()`, the clock a hook's time is taken with
 * (kill.ts subtracts it from the grace period): a timer may fire up to a millisecond early by that
 * clock (libuv keeps its loop time in whole milliseconds), and a 1 s sleep hook measured as 999 ms
 * would leave the whole grace period, as Go's `time.Since(…).Seconds()` truncation does upstream
 * for a hook that really was shorter. The timers never hold the process.
 */
async function sleepAtLeast(ms: number): Promise<void> {
  const end = Date.now() + ms;
  for (let left = ms; left > 0; left = end - Date.now()) await new Promise((resolve) => setTimeout(resolve, left).unref());
}

/**
 * Runs a lifecycle hook (the kubelet's `handlerRunner`): `exec` in the container, `httpGet` to the
 * pod's own loopback (as probes do), `sleep`. Resolves with undefined on success, else with the
 * kubelet's failure message. `tcpSocket` hooks are deprecated and refused, as the kubelet does.
 */
export async function runHook(handler: LifecycleHandler, container: Container, io: ProbeIO, timeoutMs: number): Promise<string | undefined> {
  const budget = Math.max(1000, Math.min(timeoutMs, MAX_HOOK_MS));
  if (handler.sleep) {
    await sleepAtLeast(Math.min(handler.sleep.seconds * 1000, budget));
    return undefined;
  }
  if (handler.tcpSocket) return 'TCPSocket handlers are not supported for lifecycle hooks';
  if (!handler.exec && !handler.httpGet) return 'the hook has no handler';
  const outcome = await runProbe(
    { ...(handler.exec ? { exec: handler.exec } : {}), ...(handler.httpGet ? { httpGet: handler.httpGet } : {}), timeoutSeconds: Math.ceil(budget / 1000) },
    container.ports ?? [],
    io,
  );
  if (outcome.result === 'success') return undefined;
  return handler.exec
    ? `Exec lifecycle hook (${JSON.stringify(handler.exec.command ?? [])}) for Container "${container.name}" failed - error: ${outcome.output}`
    : `HTTP lifecycle hook (${handler.httpGet?.path ?? '/'}) for Container "${container.name}" failed - error: ${outcome.output}`;
}

/** Grace left for SIGTERM after a preStop hook (the kubelet never gives less than 2 s). */
export function graceAfterHook(graceSeconds: number, hookMs: number): number {
  return Math.max(2, Math.ceil(graceSeconds - hookMs / 1000));
}
