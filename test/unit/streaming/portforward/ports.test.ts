import t from 'tap';
import { MAX_PORTS, parsePort, parsePortHeader, parsePortList } from '../../../../src/streaming/portforward/ports.js';

t.test('one port: 1..65535, Go ParseUint syntax, the kubelet texts', async (t) => {
  t.same(parsePort('1'), { port: 1 });
  t.same(parsePort('65535'), { port: 65535 });
  t.same(parsePort('0080'), { port: 80 }, 'leading zeros, as strconv');
  t.same(parsePort('0'), { error: 'port "0" must be > 0' });
  t.same(parsePort('65536'), { error: 'unable to parse "65536" as a port: strconv.ParseUint: parsing "65536": value out of range' });
  t.same(parsePort('abc'), { error: 'unable to parse "abc" as a port: strconv.ParseUint: parsing "abc": invalid syntax' });
  t.same(parsePort('-1'), { error: 'unable to parse "-1" as a port: strconv.ParseUint: parsing "-1": invalid syntax' });
  for (const bad of ['+80', ' 80', '80 ', '8o', '1e3', '0x50', '']) t.ok('error' in parsePort(bad), JSON.stringify(bad));
  t.match(parsePort('9'.repeat(400)), { error: /value out of range/ }, 'a huge number is out of range, not a crash');
  t.same(parsePort('0000000000080'), { port: 80 });
});

t.test('the SPDY port header', async (t) => {
  t.same(parsePortHeader(undefined), { error: '"port" header is required' });
  t.same(parsePortHeader(''), { error: '"port" header is required' });
  t.same(parsePortHeader('8080'), { port: 8080 });
  t.match(parsePortHeader('http'), { error: /invalid syntax/ });
});

t.test('the WebSocket port list (B15 cases)', async (t) => {
  t.same(parsePortList({}), { error: 'query parameter "port" is required' });
  t.same(parsePortList({ port: '' }), { error: 'query parameter "port" cannot be empty' });
  t.same(parsePortList({ ports: '' }), { error: 'query parameter "ports" cannot be empty' });
  t.same(parsePortList({ port: 'abc' }), { error: 'unable to parse "abc" as a port: strconv.ParseUint: parsing "abc": invalid syntax' });
  t.match(parsePortList({ port: '-1' }), { error: /invalid syntax/ });
  t.same(parsePortList({ port: '0' }), { error: 'port "0" must be > 0' });
  t.match(parsePortList({ port: '65536' }), { error: /value out of range/ });
  t.same(parsePortList({ port: '1' }), { ports: [1] });
  t.same(parsePortList({ port: '65535' }), { ports: [65535] });
  t.same(parsePortList({ port: ['7000,8000', '9000'] }), { ports: [7000, 8000, 9000] }, 'comma-joined and repeated');
  t.same(parsePortList({ port: '80', ports: ['81', '82,83'] }), { ports: [80, 81, 82, 83] }, 'port first, then ports');
  t.same(parsePortList({ port: '80,80' }), { ports: [80, 80] }, 'a port may repeat: one TCP connection each');
  t.same(parsePortList({ port: '7000,abc' }), { error: 'unable to parse "7000,abc" as a port: strconv.ParseUint: parsing "abc": invalid syntax' }, 'the whole value is quoted');
  t.same(parsePortList({ port: '80,' }), { error: 'unable to parse "80," as a port: strconv.ParseUint: parsing "": invalid syntax' });
  const thousand = Array.from({ length: 1000 }, (_, i) => String(i + 1));
  t.same(parsePortList({ port: thousand.join(',') }), { error: `too many ports: at most ${MAX_PORTS} per request` });
  t.same(parsePortList({ port: thousand }), { error: `too many ports: at most ${MAX_PORTS} per request` });
  t.same(parsePortList({ port: thousand.slice(0, MAX_PORTS) }), { ports: thousand.slice(0, MAX_PORTS).map(Number) });
  t.ok(MAX_PORTS * 2 - 1 + 0x30 <= 0x7f, 'every base64 channel character stays ASCII');
});
