import type { Service } from 'kubernetes-types/core/v1.js';

/** The services the kubelet always links, from the default namespace (`masterServices`). */
const masterServices = new Set(['kubernetes']);

/**
 * The service environment of a pod in `namespace` (the kubelet's `getServiceEnvVarMap`): the
 * `kubernetes` service of the default namespace always, and with `enableServiceLinks` every
 * service of the pod's own namespace (which wins over the default one of the same name).
 * Services without a cluster IP (headless, ExternalName) give nothing.
 */
export function serviceEnvironment(services: readonly Service[], namespace: string, enableServiceLinks: boolean): Map<string, string> {
  const chosen = new Map<string, Service>();
  for (const s of services) {
    if (!isServiceIPSet(s)) continue;
    const name = s.metadata?.name ?? '';
    const ns = s.metadata?.namespace ?? '';
    if (ns === 'default' && masterServices.has(name)) {
      if (!chosen.has(name)) chosen.set(name, s);
    } else if (ns === namespace && enableServiceLinks) {
      chosen.set(name, s);
    }
  }
  const env = new Map<string, string>();
  for (const s of chosen.values()) for (const [k, v] of fromService(s)) env.set(k, v);
  return env;
}

function isServiceIPSet(s: Service): boolean {
  const ip = s.spec?.clusterIP;
  return ip !== undefined && ip !== '' && ip !== 'None' && (s.spec?.ports?.length ?? 0) > 0;
}

const varName = (s: string) => s.replace(/-/g, '_').toUpperCase();

/** `envvars.FromServices` for one service: `<NAME>_SERVICE_HOST`/`_PORT`, named ports, Docker link variables. */
function fromService(s: Service): [string, string][] {
  const prefix = varName(s.metadata?.name ?? '');
  const ip = s.spec?.clusterIP ?? '';
  const ports = s.spec?.ports ?? [];
  const out: [string, string][] = [
    [`${prefix}_SERVICE_HOST`, ip],
    [`${prefix}_SERVICE_PORT`, String(ports[0]?.port ?? '')],
  ];
  for (const p of ports) if (p.name) out.push([`${prefix}_SERVICE_PORT_${varName(p.name)}`, String(p.port)]);
  ports.forEach((p, i) => {
    const protocol = (p.protocol || 'TCP').toLowerCase();
    const hostPort = ip.includes(':') ? `[${ip}]:${p.port}` : `${ip}:${p.port}`;
    if (i === 0) out.push([`${prefix}_PORT`, `${protocol}://${hostPort}`]);
    const portPrefix = `${prefix}_PORT_${p.port}_${protocol.toUpperCase()}`;
    out.push([portPrefix, `${protocol}://${hostPort}`], [`${portPrefix}_PROTO`, protocol], [`${portPrefix}_PORT`, String(p.port)], [`${portPrefix}_ADDR`, ip]);
  });
  return out;
}
