import { zpagesPlugin, type ZPagesOptions } from './plugins/zpages.js';
import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import { developmentSecurity, type SecurityOptions } from '../auth/index.js';
import { requestGuard } from './security.js';
import { installRequestGate } from './gate.js';
import { rejectRouteLogOptions, requestLogging } from './request-log.js';
import type { Logger } from '../logging/index.js';
import { handleError, handleFrameworkError, handleNotFound } from './errors.js';
import type { Host } from '../host/index.js';
import { apiEventsPlugin } from './plugins/api-events.js';
import { apiNamespacesPlugin } from './plugins/api-namespaces.js';
import { apiNodesPlugin } from './plugins/api-nodes.js';
import { apiPodsPlugin } from './plugins/api-pods.js';
import { discoveryPlugin, type VersionOptions } from './plugins/discovery.js';
import { healthzPlugin } from './plugins/healthz.js';
import { kubeletPodsPlugin } from './plugins/kubelet-pods.js';
import { remoteCommandPlugin, type StreamingOptions } from './plugins/remote-command.js';
import { runPlugin } from './plugins/run.js';
import { Metrics } from '../metrics/registry.js';
import { metricsPlugin } from './plugins/metrics.js';
import { logsPlugin } from './plugins/logs.js';
import { portForwardPlugin } from './plugins/port-forward.js';
import { statsPlugin } from './plugins/stats.js';
import { guardConnectionEvents } from './connections.js';
import { InactivityLimit } from './inactivity.js';
import { listenerOptions, type TlsMaterial } from './tls.js';
import { nativeUnmask } from '../streaming/websocket/handshake.js';
import { StreamingSessions, routeUpgrades } from './upgrade.js';
import { WatchStreams } from './watch.js';
import { LogStreamSlots } from '../streaming/logs/limits.js';
import { ForwardLimiter } from '../streaming/portforward/limits.js';
import { configDefault } from '../config/index.js';

export interface ServerOptions {
  host: Host;
  /** exec/attach/port-forward limits; the `Config`'s defaults (src/config/flags.ts) where absent. */
  streaming?: Partial<Omit<StreamingOptions, 'sessions' | 'portForwardConnections' | 'upgraded'>> & {
    /** Node-wide forwarded port-forward connections (default: `--max-port-forward-connections`'s). */
    maxPortForwardConnections?: number;
  };
  /** Open streaming sessions and their cap (default: `--max-streaming-sessions`'s). */
  sessions?: StreamingSessions;
  /** nodelet's metrics registry (default: a fresh one). */
  metrics?: Metrics;
  logger: Logger;
  version: VersionOptions;
  /** Largest accepted request body; nodelet's API is read-only, so the default is small. */
  bodyLimit?: number;
  /** Authentication/authorization or the read-only allow-list (default: anonymous + AlwaysAllow, the loopback dev posture). */
  security?: SecurityOptions;
  /** Serve HTTPS with this certificate (default: plain HTTP). */
  tls?: TlsMaterial;
  /** Container log streams served at once; more get 429 (default: `--max-container-log-streams`'s). */
  maxContainerLogStreams?: number;
  /** Watches open at once; more get 429 (default: `--max-watches`'s). */
  maxWatches?: number;
  /** Watches one user may have open at once; more get 429 (default: `--max-watches-per-user`'s). */
  maxWatchesPerUser?: number;
  /** How often watchers that allowed bookmarks get one (default 60 s, the apiserver's cadence). */
  bookmarkIntervalMs?: number;
  /** `/configz`, `/flagz`, `/statusz` (absent: not served, as on the read-only port). */
  zpages?: Omit<ZPagesOptions, 'paths'>;
}

/** Socket inactivity limit; the kubelet allows 4 h reads/writes for long log follows. */
const CONNECTION_INACTIVITY_MS = 4 * 60 * 60 * 1000;

/**
 * `application/json` exactly, as the apiserver and kubelet send it (Fastify would append
 * `; charset=utf-8`), and the apiserver's `X-Content-Type-Options: nosniff` on every answer.
 * Redirects are never legitimate here: a kubelet that answers 3xx can steer the apiserver's
 * upgrade proxy (CVE-2020-8559), so a 3xx that slips out of a future plugin becomes a 500.
 */
function responseHeaders(request: FastifyRequest, reply: FastifyReply, payload: unknown, done: (err: null, payload?: unknown) => void): void {
  if (reply.getHeader('content-type') === 'application/json; charset=utf-8') void reply.header('content-type', 'application/json');
  void reply.header('x-content-type-options', 'nosniff');
  if (reply.statusCode >= 300 && reply.statusCode < 400) {
    request.log.error({ statusCode: reply.statusCode }, 'refusing to send a redirect');
    void reply.removeHeader('location').code(500).type('text/plain; charset=utf-8');
    done(null, 'Internal Error: redirect refused\n');
    return;
  }
  done(null, payload);
}

/**
 * The nodelet HTTP server: kubelet endpoints plus the read-only slice of the apiserver API that
 * kubectl needs to talk to a node directly. Each endpoint family is an encapsulated plugin;
 * cross-cutting behaviour (path checks, error mapping, headers) lives on the root instance.
 * Streaming (exec/attach/portforward/logs) and metrics plugins register the same way.
 */
export function buildServer(opts: ServerOptions): FastifyInstance {
  // Widened to Fastify's logger interface so the instance keeps Fastify's default typing.
  // Fastify gets no logger of its own: it would make a pino child and set response listeners for
  // every request. Requests log through `requestLogging` instead (the same lines, made only when
  // written), and the server's own lines go to `opts.logger`.
  const logging = requestLogging(opts.logger);
  const app: FastifyInstance = Fastify({
    logger: false,
    logController: logging.logController,
    bodyLimit: opts.bodyLimit ?? 64 * 1024,
    routerOptions: {
      // `/runningpods/` and `/runningpods` both match; Fastify never redirects between them.
      ignoreTrailingSlash: true,
      // Longer than any valid name (253), so over-long names reach the path check and get a 400.
      maxParamLength: 1024,
    },
    // Slowloris guard: the whole request (headers and body) must arrive within 60 s.
    requestTimeout: 60_000,
    // No per-socket inactivity timer: Node would re-arm it on every request. The 4 h limit (the
    // kubelet allows 4 h reads/writes for long log follows) is `InactivityLimit`'s, below.
    connectionTimeout: 0,
    // The kubelet's `IdleTimeout` for keep-alive connections.
    keepAliveTimeout: 90_000,
    // Stopping must not wait for long answers such as a log follow of a silent container.
    forceCloseConnections: true,
    // One error handler, set below; a plugin replacing it in the same scope is a bug.
    allowErrorHandlerOverride: false,
    frameworkErrors: handleFrameworkError,
    // Header-size and headers-timeout limits; HTTPS (TLS >= 1.2, ALPN http/1.1) when `tls` is given.
    ...listenerOptions(opts.tls),
  });

  // No client input may end the process: a throwing handler ends its own connection only.
  guardConnectionEvents(app.server, opts.logger);
  new InactivityLimit(app.server, opts.tls ? 'secureConnection' : 'connection', CONNECTION_INACTIVITY_MS);
  app.addHook('onRoute', rejectRouteLogOptions);
  // The access log's completion lines at V(3): Fastify times a response and calls the log
  // controller's `requestCompleted` only when a route has an `onResponse` hook.
  if (logging.accessLog) app.addHook('onResponse', (_request, _reply, done) => done());
  // Fastify's own line, which its logger would have written.
  app.addHook('onListen', (done) => {
    const scheme = opts.tls ? 'https' : 'http';
    for (const a of app.addresses()) {
      opts.logger.info(`Server listening at ${typeof a === 'string' ? a : `${scheme}://${a.family === 'IPv6' ? `[${a.address}]` : a.address}:${a.port}`}`);
    }
    done();
  });
  app.setErrorHandler(handleError);
  app.setNotFoundHandler(handleNotFound);
  const metrics = opts.metrics ?? new Metrics();
  const security = opts.security ?? developmentSecurity(opts.host.nodeName);
  // Metrics, authentication and authorization (or the read-only allow-list), unknown routes and
  // path parameters, in that order, before anything else looks at the request: one root hook.
  installRequestGate(app, { metrics, serverType: security.kind === 'readOnly' ? 'readonly' : 'readwrite', guard: requestGuard(security) });
  app.addHook('onSend', responseHeaders);

  const { host } = opts;
  // Open watches end before the server closes its connections, so clients see a clean end of stream.
  const streams = new WatchStreams({ max: opts.maxWatches ?? configDefault('maxWatches'), maxPerUser: opts.maxWatchesPerUser ?? configDefault('maxWatchesPerUser') });
  const bookmarks = setInterval(() => {
    host.watch.pods.hub.bookmark();
    host.watch.events.hub.bookmark();
    host.watch.nodes.hub.bookmark();
  }, opts.bookmarkIntervalMs ?? 60_000);
  bookmarks.unref();
  app.addHook('preClose', async () => {
    clearInterval(bookmarks);
    await streams.closeAll();
  });
  // The top-level paths served, for /statusz (every route is added after this hook).
  const topPaths = new Set<string>();
  app.addHook('onRoute', (route) => {
    const first = /^\/[^/:*]*/.exec(route.url)?.[0];
    if (first && first !== '/') topPaths.add(first);
  });
  if (opts.zpages) void app.register(zpagesPlugin, { ...opts.zpages, paths: () => [...topPaths] });
  void app.register(healthzPlugin, { host });
  void app.register(kubeletPodsPlugin, { host });
  void app.register(discoveryPlugin, { version: opts.version });
  void app.register(apiPodsPlugin, { host, streams });
  void app.register(apiNamespacesPlugin, { host });
  void app.register(apiEventsPlugin, { host, streams });
  void app.register(apiNodesPlugin, { host, streams });
  void app.register(metricsPlugin, { metrics });
  void app.register(statsPlugin, { host });

  const s = opts.streaming ?? {};
  const sessions = opts.sessions ?? new StreamingSessions(configDefault('maxStreamingSessions'));
  const streaming: StreamingOptions = {
    sessions,
    idleTimeoutMs: s.idleTimeoutMs ?? configDefault('streamingConnectionIdleTimeoutMs'),
    streamCreationTimeoutMs: s.streamCreationTimeoutMs ?? 30_000,
    closeWaitMs: s.closeWaitMs ?? 60_000,
    maxPortForwardConnectionsPerSession: s.maxPortForwardConnectionsPerSession ?? configDefault('maxPortForwardConnectionsPerSession'),
    portForwardConnections: new ForwardLimiter(s.maxPortForwardConnections ?? configDefault('maxPortForwardConnections')),
    upgraded: (labels) => metrics.streamingUpgrades.inc(labels),
  };
  routeUpgrades(app, opts.logger);
  metrics.websocketNativeUnmask.set(nativeUnmask() ? 1 : 0);
  // Upgraded sockets are no longer the HTTP server's: close them so `app.close()` completes.
  app.addHook('preClose', async () => sessions.closeAll());
  void app.register(remoteCommandPlugin, { host, streaming });
  void app.register(runPlugin, { host });
  void app.register(logsPlugin, { host, slots: new LogStreamSlots(opts.maxContainerLogStreams ?? configDefault('maxContainerLogStreams')) });
  void app.register(portForwardPlugin, { host, streaming });
  return app;
}
