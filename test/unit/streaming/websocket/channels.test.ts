import t from 'tap';
import { CLOSE_SIGNAL, decodeFrame, REMOTE_COMMAND_CHANNELS, type Framing } from '../../../../src/streaming/websocket/channels.js';

// The wire form a server message takes (ChannelConnection writes it as header + payload views).
/** One outbound message: a Buffer to send as binary, or a string to send as text. */
function encodeFrame(channel: number, payload: Uint8Array, base64: boolean): Buffer | string {
  if (base64) return String.fromCharCode(0x30 + channel) + Buffer.from(payload.buffer, payload.byteOffset, payload.byteLength).toString('base64');
  const frame = Buffer.allocUnsafe(payload.byteLength + 1);
  frame[0] = channel;
  frame.set(payload, 1);
  return frame;
}

/** The v5 half-close signal for a channel (sent by clients; exposed for tests and symmetry). */
function encodeClose(channel: number): Buffer {
  return Buffer.from([CLOSE_SIGNAL, channel]);
}


const binary: Framing = { base64: false, supportsClose: false, channels: REMOTE_COMMAND_CHANNELS };
const v5: Framing = { base64: false, supportsClose: true, channels: REMOTE_COMMAND_CHANNELS };
const b64: Framing = { base64: true, supportsClose: false, channels: REMOTE_COMMAND_CHANNELS };

t.test('binary framing round trip', async (t) => {
  const frame = encodeFrame(1, Buffer.from('hi\n'), false);
  t.same(frame, Buffer.from([0x01, 0x68, 0x69, 0x0a]), 'the channel byte, then the payload');
  t.same(encodeFrame(1, Buffer.alloc(0), false), Buffer.from([0x01]), 'the "connected" frame');
  const payload = Buffer.from([0, 255, 1, 2, 3]);
  for (let ch = 0; ch < REMOTE_COMMAND_CHANNELS; ch++) {
    const d = decodeFrame(encodeFrame(ch, payload, false) as Buffer, binary);
    t.same(d, { kind: 'data', channel: ch, payload });
  }
  // Uint8Array views with offsets are framed correctly.
  const view = new Uint8Array(Buffer.from('xxabcxx').buffer, Buffer.from('xxabcxx').byteOffset + 2, 3);
  t.same(encodeFrame(2, view, false), Buffer.from([2, 0x61, 0x62, 0x63]));
});

t.test('base64 framing round trip', async (t) => {
  t.equal(encodeFrame(1, Buffer.from('hi\n'), true), '1aGkK');
  t.equal(encodeFrame(3, Buffer.alloc(0), true), '3');
  const payload = Buffer.from([0, 255, 1, 2, 3, 4, 5]);
  for (let ch = 0; ch < REMOTE_COMMAND_CHANNELS; ch++) {
    const text = encodeFrame(ch, payload, true) as string;
    t.same(decodeFrame(Buffer.from(text), b64), { kind: 'data', channel: ch, payload });
  }
  t.same(decodeFrame(Buffer.from('0aGkK\r\n'), b64), { kind: 'data', channel: 0, payload: Buffer.from('hi\n') }, 'CR/LF skipped like Go');
  t.same(decodeFrame(Buffer.from('0'), b64), { kind: 'data', channel: 0, payload: Buffer.alloc(0) });
});

t.test('malformed frames are ignored', async (t) => {
  t.equal(decodeFrame(Buffer.alloc(0), binary), undefined, 'empty message');
  t.equal(decodeFrame(Buffer.alloc(0), b64), undefined);
  t.equal(decodeFrame(Buffer.from([5, 1, 2]), binary), undefined, 'channel ≥ count');
  t.equal(decodeFrame(Buffer.from([200]), binary), undefined);
  t.equal(decodeFrame(Buffer.from([0xff, 0]), binary), undefined, 'CLOSE is only a signal under v5');
  t.equal(decodeFrame(Buffer.from('5aGkK'), b64), undefined, "base64 channel '5'");
  t.equal(decodeFrame(Buffer.from('/aGkK'), b64), undefined, "below '0' wraps around like Go's byte arithmetic");
  t.equal(decodeFrame(Buffer.from('0aGk'), b64), undefined, 'unpadded base64 (Go StdEncoding rejects it)');
  t.equal(decodeFrame(Buffer.from('0a*kK'), b64), undefined, 'invalid alphabet');
  t.equal(decodeFrame(Buffer.from('0aGkK='), b64), undefined, 'bad padding');
  t.same(decodeFrame(Buffer.from([1]), binary), { kind: 'data', channel: 1, payload: Buffer.alloc(0) }, 'channel byte alone is an empty payload');
});

t.test('v5 CLOSE signal', async (t) => {
  t.same(encodeClose(0), Buffer.from([0xff, 0x00]));
  t.same(decodeFrame(Buffer.from([0xff, 0x00]), v5), { kind: 'close', channel: 0 });
  t.same(decodeFrame(Buffer.from([0xff, 0x04]), v5), { kind: 'close', channel: 4 });
  t.match(decodeFrame(Buffer.from([0xff]), v5), { kind: 'violation', reason: /exactly 1 channel byte, got 0/ });
  t.match(decodeFrame(Buffer.from([0xff, 0, 0]), v5), { kind: 'violation', reason: /got 2/ });
  t.match(decodeFrame(Buffer.from([0xff, 5]), v5), { kind: 'violation', reason: /invalid channel 5/ });
  t.same(decodeFrame(Buffer.from([0, 0xff, 0]), v5), { kind: 'data', channel: 0, payload: Buffer.from([0xff, 0]) });
});
