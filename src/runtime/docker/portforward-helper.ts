/**
 * nodelet's port-forward helper: one process per pod, started by nodelet as
 * `nsenter -t <sandbox pid> -n -- node portforward-helper.js` with an IPC channel, so it runs in the
 * pod's network namespace. For each `dial` request it connects to 127.0.0.1:<port> (or the IP the
 * request names) there and hands
 * the connected socket back over the channel (Node's handle passing: the descriptor itself moves
 * to nodelet, which relays bytes socket to socket; this process never sees a byte). Protocol:
 * portforward-protocol.ts.
 *
 * Contracts: answers every request exactly once; never reads from a socket before handing it
 * over (it is paused before connecting, so a server that speaks first loses nothing); exits as
 * soon as the channel to nodelet is gone (nodelet stopped or died); no dependencies beyond Node.
 */
import { Socket, isIP } from 'node:net';
import { CONNECT_TIMEOUT_MS, FORWARD_HOST, connectFailureReason, isValidPort, parseDialRequest, type DialAnswer, type DialRequest } from './portforward-protocol.js';

const send = process.send?.bind(process);
if (!send) {
  process.stderr.write('portforward-helper: must be started by nodelet with an IPC channel\n');
  process.exit(2);
}

// nodelet is gone (stopped, crashed, killed): nothing is left to serve.
process.on('disconnect', () => process.exit(0));
process.on('message', (m: unknown) => {
  const req = parseDialRequest(m);
  if (req) dial(req);
});

/**
 * Sends the answer with the connected socket's raw libuv handle (Node's `net.Native` handle type,
 * the TCP wrap inside the `net.Socket`), not the `net.Socket` itself: nodelet then wraps the
 * descriptor in a socket of its own making, with options only the constructor takes (`onread`:
 * reading into one reused buffer, netns-dialer.ts). The descriptor travels with the message
 * (SCM_RIGHTS duplicates it), so this process's copy is closed once the message is written.
 */
function answer(a: DialAnswer, socket?: Socket): void {
  if (!send || !process.connected) {
    socket?.destroy();
    return;
  }
  const handle = socket ? (socket as unknown as { _handle?: object | null })._handle ?? undefined : undefined;
  if (socket && !handle) return answer({ op: 'failed', id: a.id, reason: 'port-forward helper: the connected socket is gone' });
  send(a, handle as Socket | undefined, {}, () => socket?.destroy());
}

function dial({ id, port, host = FORWARD_HOST }: DialRequest): void {
  if (!isValidPort(port)) return answer({ op: 'failed', id, reason: `invalid port ${port}` });
  // An address, never a name: nothing is resolved in the pod's namespace on nodelet's behalf.
  if (isIP(host) === 0) return answer({ op: 'failed', id, reason: `invalid address ${JSON.stringify(host)}` });
  const socket = new Socket();
  // Paused before it connects: Node then never starts reading, so every byte stays in the kernel
  // for nodelet.
  socket.pause();
  let settled = false;
  const fail = (err: { code?: unknown; message?: unknown }) => {
    if (settled) return;
    settled = true;
    clearTimeout(timer);
    socket.destroy();
    answer({ op: 'failed', id, reason: connectFailureReason(port, err, host) });
  };
  const timer = setTimeout(() => fail({ code: 'ETIMEDOUT' }), CONNECT_TIMEOUT_MS);
  // After the hand-over this object has no descriptor left; any late error is not ours to report.
  socket.on('error', fail);
  socket.once('connect', () => {
    if (settled) return;
    settled = true;
    clearTimeout(timer);
    answer({ op: 'dialed', id }, socket);
  });
  socket.connect({ host, port });
}
