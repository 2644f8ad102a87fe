import { open, realpath } from 'node:fs/promises';
import { join, normalize, sep } from 'node:path';
import { parseEnvFile } from './env-file.js';
import type { ConfigMap, Secret, Service } from 'kubernetes-types/core/v1.js';
import type { Container, FileKeySelector, Pod } from '../api/types.js';
import { envNameRe } from '../api/validation.js';
import { podFieldValue, resourceFieldValue, type PodRuntimeInfo } from './downward-api.js';
import { ContainerConfigError, needsClusterMode } from './errors.js';
import { ExpansionBudget, MAX_CONTAINER_EXPANSION_BYTES, MAX_EXPANDED_VALUE_BYTES, mappingFor } from './expansion.js';
import { serviceEnvironment } from './service-env.js';
import type { PodObjectSource } from './source.js';

export interface EnvContext {
  readonly info: PodRuntimeInfo;
  /** The apiserver's objects; absent in standalone mode. */
  readonly objects: PodObjectSource | undefined;
  /** An `InvalidEnvironmentVariableNames` warning to record on the pod. */
  readonly onInvalidKeys?: (message: string) => void;
  /**
   * The container's expansion share, shared with its command, args and subpaths (see
   * `ExpansionBudget`); a new one of `MAX_CONTAINER_EXPANSION_BYTES` when absent.
   */
  readonly budget?: ExpansionBudget;
  /**
   * The host directory of the pod's `emptyDir` volume `name`, set up (`fileKeyRef`, which may
   * only name an emptyDir); undefined for any other name.
   */
  readonly emptyDirPath?: (name: string) => string | undefined;
}

/** Most an env file read for `fileKeyRef` may hold (nodelet's cap; the kubelet has none). */
export const MAX_ENV_FILE_BYTES = 1 << 20;


/**
 * The container's environment, as the kubelet's `makeEnvironmentVariables` builds it: `envFrom`
 * sources first (prefixed keys; invalid names skipped with one event per source), then `env`
 * in order, each value `$(VAR)`-expanded against the variables defined before it (then the
 * service variables), `valueFrom`
 * read from the downward API, resources, configMaps and secrets. A later definition replaces an
 * earlier one; the service environment (see `serviceEnvironment`) fills in what is left. Throws `ContainerConfigError` with the kubelet's message when a non-optional
 * source or key is missing. Values are never logged.
 *
 * Bounded where the kubelet is not: an expanded value may hold at most `MAX_EXPANDED_VALUE_BYTES`
 * and all values together `MAX_CONTAINER_EXPANSION_BYTES` (see expansion.ts for why); past
 * either the container is refused (`ContainerConfigError` naming the variable) before the
 * oversized value is built, so `V{i}=$(V{i-1})$(V{i-1})` costs the cap, not 2^i.
 */
export async function resolveEnv(pod: Pod, container: Container, ctx: EnvContext): Promise<Map<string, string>> {
  const ns = pod.metadata?.namespace ?? 'default';
  const budget = ctx.budget ?? new ExpansionBudget(MAX_CONTAINER_EXPANSION_BYTES);
  const env = new Map<string, string>();
  const services = await serviceEnv(ctx.objects, ns, pod.spec?.enableServiceLinks !== false);
  const configMaps = new Map<string, ConfigMap | undefined>();
  const secrets = new Map<string, Secret | undefined>();
  const getConfigMap = async (name: string): Promise<ConfigMap | undefined> => {
    if (!ctx.objects) throw new ContainerConfigError(needsClusterMode(`configmap "${name}"`));
    if (!configMaps.has(name)) configMaps.set(name, await fetchObject(() => ctx.objects!.getConfigMap(ns, name), 'configmap', ns, name));
    return configMaps.get(name);
  };
  const getSecret = async (name: string): Promise<Secret | undefined> => {
    if (!ctx.objects) throw new ContainerConfigError(needsClusterMode(`secret "${name}"`));
    if (!secrets.has(name)) secrets.set(name, await fetchObject(() => ctx.objects!.getSecret(ns, name), 'secret', ns, name));
    return secrets.get(name);
  };

  for (const from of container.envFrom ?? []) {
    const prefix = from.prefix ?? '';
    let data: Record<string, string>;
    let what: string;
    if (from.configMapRef) {
      const { name = '', optional = false } = from.configMapRef;
      what = `configMap ${ns}/${name}`;
      const cm = await getConfigMap(name);
      if (!cm) {
        if (optional) continue;
        throw new ContainerConfigError(`configmap "${name}" not found`);
      }
      data = cm.data ?? {};
    } else if (from.secretRef) {
      const { name = '', optional = false } = from.secretRef;
      what = `secret ${ns}/${name}`;
      const secret = await getSecret(name);
      if (!secret) {
        if (optional) continue;
        throw new ContainerConfigError(`secret "${name}" not found`);
      }
      data = Object.fromEntries(Object.entries(secret.data ?? {}).map(([k, v]) => [k, decode(v)]));
    } else {
      continue;
    }
    const invalid: string[] = [];
    for (const [key, value] of Object.entries(data)) {
      const name = prefix + key;
      if (!envNameRe.test(name)) invalid.push(name);
      else {
        budget.spend(`env ${name} (from the EnvFrom ${what})`, value);
        env.set(name, value);
      }
    }
    if (invalid.length) {
      ctx.onInvalidKeys?.(`Keys [${invalid.sort().join(', ')}] from the EnvFrom ${what} were skipped since they are considered invalid environment variable names.`);
    }
  }

  for (const e of container.env ?? []) {
    let value = e.value ?? '';
    const from = e.valueFrom;
    if (value !== '') {
      value = budget.expand(`env ${e.name}`, value, mappingFor(env, services), MAX_EXPANDED_VALUE_BYTES);
      env.set(e.name, value);
      continue;
    } else if (from?.fieldRef) {
      value = configError(() => podFieldValue(pod, from.fieldRef!, ctx.info));
    } else if (from?.resourceFieldRef) {
      value = configError(() => resourceFieldValue(pod, container, from.resourceFieldRef!, ctx.info));
    } else if (from?.configMapKeyRef) {
      const { name = '', key, optional = false } = from.configMapKeyRef;
      const cm = await getConfigMap(name);
      if (!cm) {
        if (optional) continue;
        throw new ContainerConfigError(`configmap "${name}" not found`);
      }
      const v = cm.data?.[key];
      if (v === undefined) {
        if (optional) continue;
        throw new ContainerConfigError(`couldn't find key ${key} in ConfigMap ${ns}/${name}`);
      }
      value = v;
    } else if (from?.secretKeyRef) {
      const { name = '', key, optional = false } = from.secretKeyRef;
      const secret = await getSecret(name);
      if (!secret) {
        if (optional) continue;
        throw new ContainerConfigError(`secret "${name}" not found`);
      }
      const v = secret.data?.[key];
      if (v === undefined) {
        if (optional) continue;
        throw new ContainerConfigError(`couldn't find key ${key} in Secret ${ns}/${name}`);
      }
      value = decode(v);
    } else if (from?.fileKeyRef) {
      const found = await fileKeyValue(from.fileKeyRef, ctx);
      if (found === undefined) continue;
      value = found;
    }
    budget.spend(`env ${e.name}`, value);
    env.set(e.name, value);
  }
  // The remaining service variables come last; the container's own definitions win.
  for (const [k, v] of services) if (!env.has(k)) env.set(k, v);
  return env;
}

/** The pod's service environment (`getServiceEnvVarMap`); a failed list fails the container's config, as on the kubelet. */
async function serviceEnv(objects: PodObjectSource | undefined, namespace: string, links: boolean): Promise<Map<string, string>> {
  if (!objects?.listServices) return new Map();
  let services: Service[];
  try {
    services = await objects.listServices(namespace);
  } catch {
    throw new ContainerConfigError('failed to list services when setting up env vars');
  }
  return serviceEnvironment(services, namespace, links);
}

/** `NAME=value` strings for the runtime. */
export function envList(env: ReadonlyMap<string, string>): string[] {
  return [...env].map(([k, v]) => `${k}=${v}`);
}

/**
 * `command` and `args` with `$(VAR)` expanded against the final environment
 * (`ExpandContainerCommandAndArgs`), each element within `MAX_EXPANDED_VALUE_BYTES` and all of
 * them within what is left of the container's `budget` (a `ContainerConfigError` names the
 * first element past it).
 */
export function expandCommandAndArgs(container: Container, env: ReadonlyMap<string, string>, budget = new ExpansionBudget(MAX_CONTAINER_EXPANSION_BYTES)): { command?: string[]; args?: string[] } {
  const mapping = mappingFor(env);
  const each = (field: string, list: string[]) => list.map((s, i) => budget.expand(`${field}[${i}]`, s, mapping, MAX_EXPANDED_VALUE_BYTES));
  return {
    ...(container.command ? { command: each('command', container.command) } : {}),
    ...(container.args ? { args: each('args', container.args) } : {}),
  };
}

const decode = (b64: string) => Buffer.from(b64, 'base64').toString('utf8');

function configError<T>(fn: () => T): T {
  try {
    return fn();
  } catch (err) {
    throw new ContainerConfigError((err as Error).message);
  }
}

/** One object read: `undefined` for 404, the kubelet's `couldn't get …` for any other failure. */
async function fetchObject<T>(read: () => Promise<T | undefined>, kind: string, ns: string, name: string): Promise<T | undefined> {
  try {
    return await read();
  } catch (err) {
    throw new ContainerConfigError(`couldn't get ${kind} ${ns}/${name}: ${(err as Error).message}`);
  }
}

/**
 * `fileKeyRef` as the kubelet resolves it at container start (pkg/kubelet/kubelet_pods.go): the
 * env file at `path` inside the emptyDir volume `volumeName` (joined so it cannot leave the
 * volume, as securejoin does), parsed by `parseEnvFile`; a key it does not set is skipped when
 * `optional`, else refused. The kubelet's messages; the file's parse error is logged by neither.
 */
async function fileKeyValue(ref: FileKeySelector, ctx: EnvContext): Promise<string | undefined> {
  const { volumeName, path, key, optional = false } = ref;
  const dir = ctx.emptyDirPath?.(volumeName);
  if (dir === undefined) throw new ContainerConfigError(`cannot find the volume ${JSON.stringify(volumeName)} referenced by FileKeyRef`);
  let text: string;
  let file: string;
  try {
    file = await secureJoin(dir, path);
    const handle = await open(file, 'r');
    try {
      const buf = Buffer.alloc(MAX_ENV_FILE_BYTES + 1);
      const { bytesRead } = await handle.read(buf, 0, buf.length, 0);
      if (bytesRead > MAX_ENV_FILE_BYTES) throw new Error(`larger than ${MAX_ENV_FILE_BYTES} bytes`);
      text = buf.subarray(0, bytesRead).toString('utf8');
    } finally {
      await handle.close();
    }
  } catch {
    throw new ContainerConfigError('couldn\'t parse env file');
  }
  let value: string;
  try {
    value = parseEnvFile(text, key);
  } catch {
    throw new ContainerConfigError('couldn\'t parse env file');
  }
  if (value !== '') return value;
  if (optional) return undefined;
  throw new ContainerConfigError(`environment variable key ${JSON.stringify(key)} not found in file ${JSON.stringify(file)}`);
}

/** `path` below `root` with every symlink resolved inside it (securejoin's contract): it cannot leave `root`. */
async function secureJoin(root: string, path: string): Promise<string> {
  const base = await realpath(root);
  const joined = await realpath(join(base, normalize(`/${path}`)));
  if (joined !== base && !joined.startsWith(`${base}${sep}`)) throw new Error(`${path} leaves the volume`);
  return joined;
}
