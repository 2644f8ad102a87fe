import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { plainText } from '../../api/errors.js';
import { isDNS1123Label, isDNS1123Subdomain } from '../../api/names.js';
import type { PodStatus } from '../../api/types.js';
import type { Host } from '../../host/index.js';
import { getRoute } from '../methods.js';
import { podList } from '../objects.js';
import { queryValue } from '../params.js';

/**
 * The kubelet's own pod endpoints (pkg/kubelet/server): `/pods` (GET only, 405 + `Allow: GET`
 * otherwise), `/runningpods/` (runtime view, straight from Docker), and the 2015 `podInfo`
 * endpoints whose errors stay the plain text old clients matched on (seed `handlePodStatus`).
 */

/** The podInfo query pair, checked in the seed's order; invalid names never reach the host. */
function checkPodInfoQuery(name: string, namespace: string): void {
  if (name === '') throw plainText('BadRequest', "Missing 'podID=' query entry.");
  if (namespace === '') throw plainText('BadRequest', "Missing 'podNamespace=' query entry.");
  const nameErrs = isDNS1123Subdomain(name);
  if (nameErrs.length > 0) throw plainText('BadRequest', `Invalid 'podID=' query entry: ${nameErrs.join(', ')}`);
  const nsErrs = isDNS1123Label(namespace);
  if (nsErrs.length > 0) throw plainText('BadRequest', `Invalid 'podNamespace=' query entry: ${nsErrs.join(', ')}`);
}

/**
 * The hot reads answer synchronously from bytes serialised once per revision of the pod set and
 * the statuses (metrics agents poll `/pods`); no promise, no JSON work per request.
 */
export async function kubeletPodsPlugin(app: FastifyInstance, opts: { host: Host }): Promise<void> {
  const { host } = opts;

  let cached: { revision: string; body: Buffer } | undefined;
  getRoute(app, '/pods', (_request, reply) => {
    const revision = host.podsRevision();
    if (cached?.revision !== revision) cached = { revision, body: Buffer.from(JSON.stringify(podList(host.getPods()))) };
    void reply.type('application/json').send(cached.body);
  });

  // Registered with the kubelet's trailing slash; `ignoreTrailingSlash` serves `/runningpods` too.
  getRoute(app, '/runningpods/', async () => podList(await host.getRunningPods()));

  // Serialised answers per pod (by namespace, then name), valid for one revision of the pod set
  // and statuses. Only valid names are ever stored, so a hit needs no validation again; two maps,
  // not one keyed by a joined string, so a hit builds no string.
  let podInfoRevision = '';
  const podInfoBytes = { plain: new Map<string, Map<string, Buffer>>(), versioned: new Map<string, Map<string, Buffer>>() };
  const podInfo = (versioned: boolean) => (request: FastifyRequest, reply: FastifyReply) => {
    const name = queryValue(request, 'podID');
    const namespace = queryValue(request, 'podNamespace');
    const revision = host.podsRevision();
    if (revision !== podInfoRevision) {
      podInfoRevision = revision;
      podInfoBytes.plain.clear();
      podInfoBytes.versioned.clear();
    }
    const cache = versioned ? podInfoBytes.versioned : podInfoBytes.plain;
    let body = cache.get(namespace)?.get(name);
    if (!body) {
      checkPodInfoQuery(name, namespace);
      const pod = host.getPodByName(namespace, name);
      if (!pod) throw plainText('NotFound', 'Pod does not exist');
      const uid = pod.metadata?.uid;
      const status: PodStatus = (uid !== undefined ? host.getPodStatus(uid) : undefined) ?? pod.status ?? {};
      const answer = versioned
        ? { kind: 'PodStatusResult', apiVersion: 'v1', metadata: { name: pod.metadata?.name, namespace: pod.metadata?.namespace, uid }, status }
        : status;
      body = Buffer.from(JSON.stringify(answer));
      let names = cache.get(namespace);
      if (names === undefined) cache.set(namespace, (names = new Map()));
      names.set(name, body);
    }
    void reply.type('application/json').send(body);
  };
  getRoute(app, '/podInfo', podInfo(false));
  getRoute(app, '/api/v1beta1/podInfo', podInfo(true));
}
