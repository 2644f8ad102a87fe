import { connect, createServer, type AddressInfo, type Socket } from 'node:net';

/** A TCP port on 127.0.0.1 that was free a moment ago (bound, read, released). */
export async function freePort(): Promise<number> {
  const srv = createServer();
  await new Promise<void>((resolve, reject) => {
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', resolve);
  });
  const { port } = srv.address() as AddressInfo;
  await new Promise((resolve) => srv.close(resolve));
  return port;
}

/** A TCP relay on 127.0.0.1 that a test can cut (a network partition) and restore. */
export interface TcpProxy {
  readonly port: number;
  /** Drops every relayed connection and refuses new ones (each is accepted and closed at once). */
  cut(): void;
  /** Relays new connections again. */
  restore(): void;
  close(): Promise<void>;
}

export async function tcpProxy(target: { host: string; port: number }): Promise<TcpProxy> {
  const live = new Set<Socket>();
  let open = true;
  const server = createServer((client) => {
    if (!open) {
      client.destroy();
      return;
    }
    const upstream = connect(target.port, target.host);
    live.add(client);
    live.add(upstream);
    const close = () => {
      client.destroy();
      upstream.destroy();
      live.delete(client);
      live.delete(upstream);
    };
    for (const s of [client, upstream]) {
      s.on('error', close);
      s.on('close', close);
    }
    client.pipe(upstream);
    upstream.pipe(client);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const cut = () => {
    open = false;
    for (const s of live) s.destroy();
    live.clear();
  };
  return {
    port,
    cut,
    restore: () => {
      open = true;
    },
    close: async () => {
      cut();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}
