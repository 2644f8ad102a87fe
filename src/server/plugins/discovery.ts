import type { FastifyInstance } from 'fastify';
import type { APIResource, APIResourceList } from '../../api/types.js';
import type { APIGroup } from 'kubernetes-types/meta/v1.js';
import { metricsGroupVersion } from '../../stats/types.js';
import { getRoute } from '../methods.js';

/**
 * Legacy (unaggregated) apiserver discovery, enough for kubectl to resolve `pods`, `po`,
 * `nodes`, `events` and `namespaces` against nodelet directly, and to find `metrics.k8s.io` for
 * `kubectl top` (its resource list is served by the stats plugin). kubectl asks for aggregated
 * discovery (`as=APIGroupDiscoveryList`) but lists plain `application/json` last and accepts the
 * legacy bodies, so those are always what is sent.
 */

export interface VersionOptions {
  gitVersion: string;
  gitCommit?: string;
  gitTreeState?: string;
  buildDate?: string;
}

/** k8s.io/apimachinery/pkg/version.Info. */
export interface VersionInfo {
  major: string;
  minor: string;
  gitVersion: string;
  gitCommit: string;
  gitTreeState: string;
  buildDate: string;
  goVersion: string;
  compiler: string;
  platform: string;
}

/** meta/v1 APIVersions (not re-exported by src/api/types.ts). */
interface APIVersions {
  kind: 'APIVersions';
  versions: string[];
  serverAddressByClientCIDRs: Array<{ clientCIDR: string; serverAddress: string }>;
}

/** meta/v1 APIGroupList. */
interface APIGroupList {
  kind: 'APIGroupList';
  apiVersion: 'v1';
  groups: APIGroup[];
}

/**
 * The one API group nodelet serves: metrics-server's, so `kubectl top` (which checks `/apis` for
 * `metrics.k8s.io` with version v1beta1 before anything else) works against the node.
 */
export const metricsAPIGroup: APIGroup = {
  name: 'metrics.k8s.io',
  versions: [{ groupVersion: metricsGroupVersion, version: 'v1beta1' }],
  preferredVersion: { groupVersion: metricsGroupVersion, version: 'v1beta1' },
};

const goArch: Record<string, string> = { x64: 'amd64', arm64: 'arm64', arm: 'arm', ia32: '386', ppc64: 'ppc64le', s390x: 's390x' };

export function versionInfo(v: VersionOptions): VersionInfo {
  const m = /^v?(\d+)\.(\d+)/.exec(v.gitVersion);
  return {
    major: m?.[1] ?? '',
    minor: m?.[2] ?? '',
    gitVersion: v.gitVersion,
    gitCommit: v.gitCommit ?? '',
    gitTreeState: v.gitTreeState ?? '',
    buildDate: v.buildDate ?? '',
    goVersion: '',
    compiler: 'nodelet',
    // GOOS/GOARCH spelling, as `kubectl version` prints it.
    platform: `${process.platform}/${goArch[process.arch] ?? process.arch}`,
  };
}

/** What `/api/v1` advertises: only verbs nodelet serves (or will, for the streaming subresources). */
export const coreV1Resources: readonly APIResource[] = [
  { name: 'pods', singularName: 'pod', namespaced: true, kind: 'Pod', verbs: ['delete', 'get', 'list', 'watch'], shortNames: ['po'], categories: ['all'] },
  { name: 'pods/status', singularName: '', namespaced: true, kind: 'Pod', verbs: ['get'] },
  { name: 'pods/exec', singularName: '', namespaced: true, kind: 'PodExecOptions', verbs: ['create', 'get'] },
  { name: 'pods/attach', singularName: '', namespaced: true, kind: 'PodAttachOptions', verbs: ['create', 'get'] },
  { name: 'pods/log', singularName: '', namespaced: true, kind: 'Pod', verbs: ['get'] },
  { name: 'pods/portforward', singularName: '', namespaced: true, kind: 'PodPortForwardOptions', verbs: ['create', 'get'] },
  { name: 'nodes', singularName: 'node', namespaced: false, kind: 'Node', verbs: ['get', 'list', 'watch'], shortNames: ['no'] },
  { name: 'nodes/status', singularName: '', namespaced: false, kind: 'Node', verbs: ['get'] },
  { name: 'namespaces', singularName: 'namespace', namespaced: false, kind: 'Namespace', verbs: ['get', 'list'], shortNames: ['ns'] },
  { name: 'events', singularName: 'event', namespaced: true, kind: 'Event', verbs: ['list', 'watch'], shortNames: ['ev'] },
];

export async function discoveryPlugin(app: FastifyInstance, opts: { version: VersionOptions }): Promise<void> {
  const info = versionInfo(opts.version);

  getRoute(app, '/version', async () => info);

  getRoute(app, '/api', async (request): Promise<APIVersions> => ({
    kind: 'APIVersions',
    versions: ['v1'],
    // The apiserver advertises its own address; the Host the client used is the best we know.
    serverAddressByClientCIDRs: [{ clientCIDR: '0.0.0.0/0', serverAddress: request.host }],
  }));

  getRoute(app, '/apis', async (): Promise<APIGroupList> => ({ kind: 'APIGroupList', apiVersion: 'v1', groups: [structuredClone(metricsAPIGroup)] }));

  getRoute(app, '/api/v1', async (): Promise<APIResourceList> => ({
    kind: 'APIResourceList',
    groupVersion: 'v1',
    resources: coreV1Resources.map((r) => ({ ...r })),
  }));
}
