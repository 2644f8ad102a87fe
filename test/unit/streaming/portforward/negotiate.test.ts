import t from 'tap';
import { negotiatePortForwardProtocol, selectPortForwardMode } from '../../../../src/streaming/portforward/negotiate.js';

t.test('WebSocket subprotocol choice: client order, tunnel included, unknown-only refused', async (t) => {
  t.same(selectPortForwardMode([]), { mode: 'channel', protocol: '', base64: false });
  t.same(selectPortForwardMode(['SPDY/3.1+portforward.k8s.io']), { mode: 'tunnel' });
  t.same(selectPortForwardMode(['v5.channel.k8s.io', 'v4.channel.k8s.io', 'channel.k8s.io']), { mode: 'channel', protocol: 'v4.channel.k8s.io', base64: false }, 'client-node gets v4');
  t.same(selectPortForwardMode(['v4.base64.channel.k8s.io']), { mode: 'channel', protocol: 'v4.base64.channel.k8s.io', base64: true });
  t.same(selectPortForwardMode(['v4.channel.k8s.io', 'SPDY/3.1+portforward.k8s.io']), { mode: 'channel', protocol: 'v4.channel.k8s.io', base64: false });
  t.equal(selectPortForwardMode(['v5.channel.k8s.io']), undefined);
  t.equal(selectPortForwardMode(['SPDY/3.1+v2.portforward.k8s.io']), undefined, 'the 1.30 alpha name is not served');
});

const KUBECTL_129 = ['v5.channel.k8s.io', 'v4.channel.k8s.io', 'v3.channel.k8s.io', 'v2.channel.k8s.io', 'channel.k8s.io'];

t.test('SPDY: portforward.k8s.io only', async (t) => {
  t.same(negotiatePortForwardProtocol(['portforward.k8s.io']), { protocol: 'portforward.k8s.io' });
  t.same(negotiatePortForwardProtocol(undefined), { error: 400, message: 'unable to upgrade: X-Stream-Protocol-Version is required' });
  t.same(negotiatePortForwardProtocol(KUBECTL_129), {
    error: 403,
    message: `unable to upgrade: unable to negotiate protocol: client supports [${KUBECTL_129.join(' ')}], server accepts [portforward.k8s.io]`,
    accepted: ['portforward.k8s.io'],
  });
});
