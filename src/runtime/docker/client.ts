import Docker from 'dockerode';

/** A dockerode client for a `--docker-endpoint` value: `unix:///path`, `tcp://host:port`, `http(s)://…`. */
export function dockerClient(endpoint: string): Docker {
  const url = new URL(endpoint);
  switch (url.protocol) {
    case 'unix:':
      return new Docker({ socketPath: url.pathname });
    case 'tcp:':
    case 'http:':
      return new Docker({ host: url.hostname, port: Number(url.port || 2375), protocol: 'http' });
    case 'https:':
      return new Docker({ host: url.hostname, port: Number(url.port || 2376), protocol: 'https' });
    default:
      throw new Error(`unsupported Docker endpoint "${endpoint}": use unix:///path or tcp://host:port`);
  }
}

/** Docker answers 404 for a missing object, 304 for "already in that state". */
export function statusCodeOf(err: unknown): number | undefined {
  const code = (err as { statusCode?: unknown } | null)?.statusCode;
  return typeof code === 'number' ? code : undefined;
}
