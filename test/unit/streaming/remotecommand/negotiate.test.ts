import t from 'tap';
import { negotiateRemoteCommandProtocol, protocolInfo, protocolName, selectWebSocketProtocol } from '../../../../src/streaming/remotecommand/negotiate.js';

const KUBECTL_129 = ['v5.channel.k8s.io', 'v4.channel.k8s.io', 'v3.channel.k8s.io', 'v2.channel.k8s.io', 'channel.k8s.io'];
const SERVER = '[v4.channel.k8s.io v3.channel.k8s.io v2.channel.k8s.io channel.k8s.io]';

t.test('SPDY remote command: first client protocol the server supports wins', async (t) => {
  t.same(negotiateRemoteCommandProtocol(KUBECTL_129), { protocol: 'v4.channel.k8s.io' }, 'v5 over SPDY resolves to v4');
  t.same(negotiateRemoteCommandProtocol(KUBECTL_129.join(', ')), { protocol: 'v4.channel.k8s.io' });
  t.same(negotiateRemoteCommandProtocol(['v5.channel.k8s.io, v4.channel.k8s.io']), { protocol: 'v4.channel.k8s.io' });
  t.same(negotiateRemoteCommandProtocol(KUBECTL_129.slice(1)), { protocol: 'v4.channel.k8s.io' }, 'kubectl 1.27/1.28');
  t.same(negotiateRemoteCommandProtocol(['channel.k8s.io', 'v4.channel.k8s.io']), { protocol: 'channel.k8s.io' }, 'client order, not server order');
  t.same(negotiateRemoteCommandProtocol(['v9.channel.k8s.io', 'v2.channel.k8s.io']), { protocol: 'v2.channel.k8s.io' });
  t.same(negotiateRemoteCommandProtocol('V4.CHANNEL.K8S.IO, v3.channel.k8s.io'), { protocol: 'v3.channel.k8s.io' }, 'case-sensitive like Go');
});

t.test('SPDY: missing header → 400', async (t) => {
  const want = { error: 400, message: 'unable to upgrade: X-Stream-Protocol-Version is required' };
  t.same(negotiateRemoteCommandProtocol(undefined), want);
  t.same(negotiateRemoteCommandProtocol([]), want);
  t.same(negotiateRemoteCommandProtocol(''), want);
});

t.test('SPDY: no overlap → 403 listing the accepted protocols', async (t) => {
  t.same(negotiateRemoteCommandProtocol(['v5.channel.k8s.io']), {
    error: 403,
    message: `unable to upgrade: unable to negotiate protocol: client supports [v5.channel.k8s.io], server accepts ${SERVER}`,
    accepted: ['v4.channel.k8s.io', 'v3.channel.k8s.io', 'v2.channel.k8s.io', 'channel.k8s.io'],
  });
  t.same(negotiateRemoteCommandProtocol('v9.channel.k8s.io, portforward.k8s.io'), {
    error: 403,
    message: `unable to upgrade: unable to negotiate protocol: client supports [v9.channel.k8s.io portforward.k8s.io], server accepts ${SERVER}`,
    accepted: ['v4.channel.k8s.io', 'v3.channel.k8s.io', 'v2.channel.k8s.io', 'channel.k8s.io'],
  });
});

t.test('WebSocket subprotocol selection', async (t) => {
  t.equal(selectWebSocketProtocol(new Set(['v5.channel.k8s.io'])), 'v5.channel.k8s.io', 'kubectl ≥ 1.30');
  t.equal(selectWebSocketProtocol(new Set(KUBECTL_129)), 'v5.channel.k8s.io', 'client-node offers v5…v1');
  t.equal(selectWebSocketProtocol(['v4.channel.k8s.io', 'v5.channel.k8s.io']), 'v4.channel.k8s.io', "client's order decides");
  t.equal(selectWebSocketProtocol(['v3.channel.k8s.io', 'base64.channel.k8s.io']), 'base64.channel.k8s.io', 'v3/v2 are not served over WS');
  t.equal(selectWebSocketProtocol(['v4.base64.channel.k8s.io']), 'v4.base64.channel.k8s.io');
  t.equal(selectWebSocketProtocol(['channel.k8s.io']), 'channel.k8s.io');
  t.equal(selectWebSocketProtocol(new Set()), '', 'none offered → v1 binary, no header');
  t.equal(selectWebSocketProtocol([]), '');
  t.equal(selectWebSocketProtocol(['v3.channel.k8s.io', 'v2.channel.k8s.io']), false);
  t.equal(selectWebSocketProtocol(['SPDY/3.1+portforward.k8s.io']), false);
});

t.test('protocol names ↔ versions', async (t) => {
  t.same(protocolInfo(''), { version: 'v1', base64: false });
  t.same(protocolInfo('channel.k8s.io'), { version: 'v1', base64: false });
  t.same(protocolInfo('base64.channel.k8s.io'), { version: 'v1', base64: true });
  t.same(protocolInfo('v2.channel.k8s.io'), { version: 'v2', base64: false });
  t.same(protocolInfo('v3.channel.k8s.io'), { version: 'v3', base64: false });
  t.same(protocolInfo('v4.channel.k8s.io'), { version: 'v4', base64: false });
  t.same(protocolInfo('v4.base64.channel.k8s.io'), { version: 'v4', base64: true });
  t.same(protocolInfo('v5.channel.k8s.io'), { version: 'v5', base64: false });
  t.equal(protocolInfo('v9.channel.k8s.io'), undefined);
  t.equal(protocolInfo('toString'), undefined, 'no prototype lookups');
  t.equal(protocolName('v1'), 'channel.k8s.io');
  t.equal(protocolName('v1', true), 'base64.channel.k8s.io');
  t.equal(protocolName('v4', true), 'v4.base64.channel.k8s.io');
  t.equal(protocolName('v5'), 'v5.channel.k8s.io');
  t.equal(protocolName('v5', true), undefined);
});
