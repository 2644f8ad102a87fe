import { connect, type Socket } from 'node:net';

export interface RawResponse {
  status: number;
  headers: Record<string, string[]>;
  body: string;
}

/**
 * Sends a hand-written HTTP/1.1 request and reads the response head (and body until the server
 * closes or `ms` passes). Used where fetch cannot go: Upgrade requests and odd headers.
 */
export function rawRequest(url: string, lines: string[], ms = 5000, opts: { keepOpen?: boolean } = {}): Promise<RawResponse & { close(): void }> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname);
    let data = '';
    const done = () => {
      if (!opts.keepOpen) socket.destroy();
      const [head = '', ...rest] = data.split('\r\n\r\n');
      const [statusLine = '', ...headerLines] = head.split('\r\n');
      const headers: Record<string, string[]> = {};
      for (const l of headerLines) {
        const i = l.indexOf(':');
        if (i < 0) continue;
        const k = l.slice(0, i).trim().toLowerCase();
        (headers[k] ??= []).push(l.slice(i + 1).trim());
      }
      const status = Number(statusLine.split(' ')[1]);
      if (!status) return reject(new Error(`no HTTP response: ${JSON.stringify(data.slice(0, 200))}`));
      resolve({ status, headers, body: rest.join('\r\n\r\n'), close: () => socket.destroy() });
    };
    const timer = setTimeout(done, ms);
    socket.on('data', (d: Buffer) => {
      data += d.toString('latin1');
      // A 101 leaves the socket open: the head is all we need.
      if (data.startsWith('HTTP/1.1 101') && data.includes('\r\n\r\n')) {
        clearTimeout(timer);
        done();
      }
    });
    socket.on('close', () => {
      clearTimeout(timer);
      done();
    });
    socket.on('error', () => undefined);
    socket.write(lines.join('\r\n') + '\r\n\r\n');
  });
}

/**
 * Waits for a `101` on `socket` after an Upgrade request was written, then leaves the socket
 * paused with any bytes after the response head unshifted, ready for the upgraded protocol.
 * Rejects with the response head when it is not a 101.
 */
export function awaitSwitchingProtocols(socket: Socket): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    let buf = Buffer.alloc(0);
    const onData = (d: Buffer) => {
      buf = Buffer.concat([buf, d]);
      const end = buf.indexOf('\r\n\r\n');
      if (end < 0) return;
      socket.off('data', onData);
      socket.pause();
      const head = buf.subarray(0, end).toString();
      if (!head.startsWith('HTTP/1.1 101')) return reject(new Error(head));
      if (buf.length > end + 4) socket.unshift(buf.subarray(end + 4));
      resolve();
    };
    socket.on('data', onData);
    socket.on('error', reject);
  });
}
