import type { Runtime } from '../runtime/types.js';
import type { Metrics } from './registry.js';

/** The kubelet's CRI operation names for each `Runtime` method (`kubelet_runtime_operations_*`). */
const operationOf = {
  listPods: 'list_containers',
  imageStatus: 'image_status',
  pullImage: 'pull_image',
  runSandbox: 'run_podsandbox',
  stopSandbox: 'stop_podsandbox',
  startContainer: 'start_container',
  stopContainer: 'stop_container',
  removeContainer: 'remove_container',
  ping: 'version',
  exec: 'exec',
  attach: 'attach',
  logs: 'container_logs',
  portForward: 'port_forward',
  containerStats: 'container_stats',
  updateContainerResources: 'update_container',
} as const satisfies Partial<Record<keyof Runtime, string>>;

type Timed = keyof typeof operationOf;

/**
 * Wraps a runtime so every call is counted and timed (the kubelet's `instrumentedRuntimeService`).
 * `watch` is a subscription and `networkStatus` a reading of memory, not operations: both pass through.
 */
export function instrumentRuntime(runtime: Runtime, metrics: Metrics): Runtime {
  const timed = <K extends Timed>(name: K): Runtime[K] => {
    const operation_type = operationOf[name];
    const fn = runtime[name] as unknown as (...args: unknown[]) => Promise<unknown>;
    return (async (...args: unknown[]) => {
      metrics.runtimeOperations.inc({ operation_type });
      const end = metrics.runtimeOperationDuration.startTimer({ operation_type });
      try {
        return await fn.apply(runtime, args);
      } catch (err) {
        metrics.runtimeOperationErrors.inc({ operation_type });
        metrics.dockerErrors.inc({ operation_type });
        throw err;
      } finally {
        end();
      }
    }) as Runtime[K];
  };
  return {
    listPods: timed('listPods'),
    imageStatus: timed('imageStatus'),
    pullImage: timed('pullImage'),
    runSandbox: timed('runSandbox'),
    stopSandbox: timed('stopSandbox'),
    startContainer: timed('startContainer'),
    stopContainer: timed('stopContainer'),
    removeContainer: timed('removeContainer'),
    ping: timed('ping'),
    exec: timed('exec'),
    attach: timed('attach'),
    logs: timed('logs'),
    portForward: timed('portForward'),
    containerStats: timed('containerStats'),
    // Optional: a runtime without it refuses in-place resizes, and so does the wrapper.
    ...(runtime.updateContainerResources ? { updateContainerResources: timed('updateContainerResources') } : {}),
    watch: (onChange) => runtime.watch(onChange),
    networkStatus: () => runtime.networkStatus(),
  };
}
