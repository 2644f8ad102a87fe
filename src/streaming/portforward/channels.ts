/** The channel layout of the kubelet's WebSocket port-forward (`portforward/websocket.go`, channel mode). */

/** Port i reads and writes data on channel 2i… */
export const dataChannel = (index: number): number => 2 * index;
/** …and reports its errors (text) on channel 2i+1. */
export const errorChannel = (index: number): number => 2 * index + 1;

/** The first message on both channels of a port: the port as uint16 little-endian. */
export function portPrefix(port: number): Buffer {
  const b = Buffer.alloc(2);
  b.writeUInt16LE(port);
  return b;
}
