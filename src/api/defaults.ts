import type { Container, Pod, PodSpec } from './types.js';

/**
 * The subset of the apiserver's `SetDefaults_Pod` / `SetDefaults_PodSpec` / `SetDefaults_Container`
 * that the kubelet relies on. Pods from an apiserver arrive defaulted; static pods are decoded
 * through the same defaulting, so nodelet applies it to file pods. Only absent fields are set,
 * and a new object is returned. Ill-typed input (e.g. `spec: "x"`) is left for validation.
 */
export function applyPodSpecDefaults(pod: Pod): Pod {
  const out = structuredClone(pod);
  if (!isObject(out.spec)) return out;
  const spec: PodSpec = out.spec;
  spec.restartPolicy ||= 'Always';
  spec.dnsPolicy ||= 'ClusterFirst';
  spec.terminationGracePeriodSeconds ??= 30;
  spec.schedulerName ||= 'default-scheduler';
  spec.securityContext ??= {};
  spec.enableServiceLinks ??= true;
  for (const list of [spec.initContainers, spec.containers]) {
    if (!Array.isArray(list)) continue;
    for (const c of list) if (isObject(c)) defaultContainer(c, spec.hostNetwork === true);
  }
  return out;
}

function defaultContainer(c: Container, hostNetwork: boolean): void {
  c.terminationMessagePath ||= '/dev/termination-log';
  c.terminationMessagePolicy ||= 'File';
  c.imagePullPolicy ||= defaultPullPolicy(typeof c.image === 'string' ? c.image : '');
  c.resources ??= {};
  if (Array.isArray(c.ports)) {
    for (const p of c.ports) {
      if (!isObject(p)) continue;
      p.protocol ||= 'TCP';
      // defaultHostNetworkPorts: on the host's network a container port is a host port.
      if (hostNetwork && !p.hostPort && typeof p.containerPort === 'number') p.hostPort = p.containerPort;
    }
  }
}

/**
 * `Always` for `:latest` or an untagged image (which means latest), else `IfNotPresent`. A digest
 * pins the image, so `name@sha256:…` is IfNotPresent. As in the apiserver, an unparsable
 * (here: empty) reference yields no tag and so IfNotPresent.
 */
export function defaultPullPolicy(image: string): 'Always' | 'IfNotPresent' {
  if (image === '') return 'IfNotPresent';
  const tag = imageTag(image);
  return tag === undefined || tag === 'latest' ? 'Always' : 'IfNotPresent';
}

/** The tag of an image reference: `latest` for `nginx:latest`, `undefined` when untagged, `''` for a bare digest. */
export function imageTag(image: string): string | undefined {
  const at = image.indexOf('@');
  const name = at >= 0 ? image.slice(0, at) : image;
  // A colon before the last slash is a registry port (`localhost:5000/app`), not a tag.
  const colon = name.lastIndexOf(':');
  if (colon > name.lastIndexOf('/')) return name.slice(colon + 1);
  return at >= 0 ? '' : undefined;
}

function isObject(v: unknown): v is object {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
