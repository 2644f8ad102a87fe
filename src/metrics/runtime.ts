import { performance } from 'node:perf_hooks';
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
  createContainer: 'create_container',
  startCreatedContainer: 'start_container',
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
  // Not an async wrapper: an exec or attach is timed for as long as its session lasts (hours for an
  // idle one), and a suspended async frame (its generator, context and promises) would be kept that
  // long per session; one reaction on the call's own promise is all a call keeps here.
  const timed = <K extends Timed>(name: K): Runtime[K] => {
    const labels = { operation_type: operationOf[name] };
    const fn = runtime[name] as unknown as (...args: unknown[]) => Promise<unknown>;
    return ((...args: unknown[]): Promise<unknown> => {
      metrics.runtimeOperations.inc(labels);
      const start = performance.now();
      let call: Promise<unknown>;
      try {
        call = Promise.resolve(fn.apply(runtime, args));
      } catch (err) {
        call = Promise.reject(err);
      }
      return call.then(
        (value) => {
          metrics.runtimeOperationDuration.observe(labels, (performance.now() - start) / 1000);
          return value;
        },
        (err: unknown) => {
          metrics.runtimeOperationErrors.inc(labels);
          metrics.dockerErrors.inc(labels);
          metrics.runtimeOperationDuration.observe(labels, (performance.now() - start) / 1000);
          throw err;
        },
      );
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
    ...(runtime.createContainer && runtime.startCreatedContainer ? { createContainer: timed('createContainer'), startCreatedContainer: timed('startCreatedContainer') } : {}),
    watch: (onChange, onStream) => runtime.watch(onChange, onStream),
    networkStatus: () => runtime.networkStatus(),
  };
}
