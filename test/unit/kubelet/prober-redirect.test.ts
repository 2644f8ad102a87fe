import t from 'tap';
import { runProbe, type ProbeIO } from '../../../src/kubelet/prober/handlers.js';

/** A pod-side HTTP server in memory: `routes` maps a request path to a raw answer. */
function server(routes: Record<string, string>): ProbeIO & { requests: string[] } {
  const requests: string[] = [];
  return {
    host: '10.0.0.5',
    requests,
    exec: async () => ({ exitCode: 0, output: '' }),
    connect: async (port, send, _timeoutMs, until, host) => {
      const line = send.toString('latin1').split('\r\n')[0] ?? '';
      const hostHeader = /\r\nHost: ([^\r\n]*)/.exec(send.toString('latin1'))?.[1];
      requests.push(`${host}:${port} ${line} (Host: ${hostHeader})`);
      const path = line.split(' ')[1] ?? '';
      const answer = Buffer.from(routes[path] ?? 'HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n', 'latin1');
      // What an `until` that stops early would have kept: the answer up to where it said enough.
      if (until) for (let n = 1; n <= answer.length; n++) if (until(answer.subarray(0, n))) return answer.subarray(0, n);
      return answer;
    },
    dial: () => {
      throw new Error('no dial');
    },
  };
}
const redirect = (location: string, body = '') => `HTTP/1.1 302 Found\r\nLocation: ${location}\r\nContent-Length: ${body.length}\r\n\r\n${body}`;
const probe = (path: string) => ({ httpGet: { path, port: 8080 } });

t.test('a redirect to the same host is followed: its target decides', async (t) => {
  const io = server({ '/redirect?loc=%2Fhealthz': redirect('/healthz'), '/healthz': 'HTTP/1.1 500 Internal Server Error\r\nContent-Length: 0\r\n\r\n' });
  const out = await runProbe(probe('/redirect?loc=%2Fhealthz'), [], io);
  t.same(out, { result: 'failure', output: 'HTTP probe failed with statuscode: 500' });
  t.same(io.requests, ['10.0.0.5:8080 GET /redirect?loc=%2Fhealthz HTTP/1.1 (Host: 10.0.0.5:8080)', '10.0.0.5:8080 GET /healthz HTTP/1.1 (Host: 10.0.0.5:8080)']);
  const ok = await runProbe(probe('/r'), [], server({ '/r': redirect('http://10.0.0.5:9090/up?x=1'), '/up?x=1': 'HTTP/1.1 200 OK\r\n\r\n' }));
  t.same(ok, { result: 'success', output: 'HTTP probe succeeded with statuscode: 200' }, 'same host, another port: followed');
});

t.test('a redirect to another host is not followed: a success with the kubelet warning and the body', async (t) => {
  const body = '<a href="http://0.0.0.0/">Found</a>.\n\n';
  const io = server({ '/redirect?loc=http%3A%2F%2F0.0.0.0%2F': redirect('http://0.0.0.0/', body) });
  const out = await runProbe(probe('/redirect?loc=http%3A%2F%2F0.0.0.0%2F'), [], io);
  t.equal(out.result, 'success');
  t.equal(out.warning, `Probe terminated redirects, Response body: ${body}`);
  t.equal(io.requests.length, 1, 'nothing sent to the other host');
});

t.test('redirects stop after 10', async (t) => {
  const io = server({ '/loop': redirect('/loop') });
  const out = await runProbe(probe('/loop'), [], io);
  t.equal(out.result, 'failure');
  t.match(out.output, /stopped after 10 redirects/);
  t.equal(io.requests.length, 10);
});
