import t from 'tap';
import { dataChannel, errorChannel, offeredProtocols, portPrefix, selectPortForwardMode } from '../../../../src/streaming/portforward/channels.js';

t.test('channel layout and the port prefix', async (t) => {
  t.same([0, 1, 2].map(dataChannel), [0, 2, 4]);
  t.same([0, 1, 2].map(errorChannel), [1, 3, 5]);
  t.same([...portPrefix(8080)], [0x90, 0x1f], 'uint16 little-endian');
  t.same([...portPrefix(1)], [1, 0]);
  t.same([...portPrefix(65535)], [0xff, 0xff]);
});

t.test('subprotocol choice: client order, tunnel included, unknown-only refused', async (t) => {
  t.same(selectPortForwardMode([]), { mode: 'channel', protocol: '', base64: false });
  t.same(selectPortForwardMode(['SPDY/3.1+portforward.k8s.io']), { mode: 'tunnel' });
  t.same(selectPortForwardMode(['v5.channel.k8s.io', 'v4.channel.k8s.io', 'channel.k8s.io']), { mode: 'channel', protocol: 'v4.channel.k8s.io', base64: false }, 'client-node gets v4');
  t.same(selectPortForwardMode(['v4.base64.channel.k8s.io']), { mode: 'channel', protocol: 'v4.base64.channel.k8s.io', base64: true });
  t.same(selectPortForwardMode(['v4.channel.k8s.io', 'SPDY/3.1+portforward.k8s.io']), { mode: 'channel', protocol: 'v4.channel.k8s.io', base64: false });
  t.equal(selectPortForwardMode(['v5.channel.k8s.io']), undefined);
  t.equal(selectPortForwardMode(['SPDY/3.1+v2.portforward.k8s.io']), undefined, 'the 1.30 alpha name is not served');
  t.same(offeredProtocols('a, b ,,c'), ['a', 'b', 'c']);
  t.same(offeredProtocols(['a', 'b,c']), ['a', 'b', 'c']);
  t.same(offeredProtocols(undefined), []);
});
