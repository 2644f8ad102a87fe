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

/**
 * Parses a Docker container name; undefined when it is not a Kubernetes-managed name. The result
 * is frozen and remembered per name: every relist parses every container's name again, and a
 * container keeps its name for life.
 */
export function parseContainerName(dockerName: string): Readonly<ParsedName> | undefined {
  if (parsedNames.has(dockerName)) return parsedNames.get(dockerName);
  const parsed = parseUncached(dockerName);
  // Bounded: a node holds far fewer containers; past the bound the memo starts over.
  if (parsedNames.size >= PARSED_NAMES_LIMIT) parsedNames.clear();
  parsedNames.set(dockerName, parsed);
  return parsed;
}

const PARSED_NAMES_LIMIT = 8192;
const parsedNames = new Map<string, Readonly<ParsedName> | undefined>();

function parseUncached(dockerName: string): Readonly<ParsedName> | undefined {
  const parts = dockerName.replace(/^\//, '').split(DELIMITER);
  if ((parts.length !== 6 && parts.length !== 7) || parts[0] !== PREFIX) return undefined;
  const [, container, pod, namespace, uid, attemptText] = parts as [string, string, string, string, string, string];
  if (!/^\d{1,10}$/.test(attemptText)) return undefined;
  const attempt = Number(attemptText);
  if (attempt > 0xffffffff) return undefined;
  return Object.freeze({ container, pod, namespace, uid, attempt });
}
