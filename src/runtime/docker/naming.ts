/**
 * dockershim / cri-dockerd container names: `k8s_<container>_<pod>_<namespace>_<uid>_<attempt>`,
 * with `POD` as the container name of the sandbox. Docker prefixes names with `/`; on a name
 * conflict cri-dockerd appends a random `_%08x`, so 6 or 7 parts parse (core/naming.go).
 */
export const SANDBOX_CONTAINER_NAME = 'POD';
const PREFIX = 'k8s';
const DELIMITER = '_';

export interface ParsedName {
  container: string;
  pod: string;
  namespace: string;
  uid: string;
  attempt: number;
}

export interface NameParts {
  pod: string;
  namespace: string;
  uid: string;
}

export function makeContainerName(container: string, parts: NameParts, attempt: number): string {
  return [PREFIX, container, parts.pod, parts.namespace, parts.uid, String(attempt)].join(DELIMITER);
}

export function makeSandboxName(parts: NameParts, attempt: number): string {
  return makeContainerName(SANDBOX_CONTAINER_NAME, parts, attempt);
}

/** Parses a Docker container name; undefined when it is not a Kubernetes-managed name. */
export function parseContainerName(dockerName: string): ParsedName | undefined {
  const parts = dockerName.replace(/^\//, '').split(DELIMITER);
  if ((parts.length !== 6 && parts.length !== 7) || parts[0] !== PREFIX) return undefined;
  const [, container, pod, namespace, uid, attemptText] = parts as [string, string, string, string, string, string];
  if (!/^\d{1,10}$/.test(attemptText)) return undefined;
  const attempt = Number(attemptText);
  if (attempt > 0xffffffff) return undefined;
  return { container, pod, namespace, uid, attempt };
}
