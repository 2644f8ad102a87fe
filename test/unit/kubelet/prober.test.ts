import t from 'tap';
import type { Pod, Probe } from 'kubernetes-types/core/v1.js';
import { ProberManager, type ProbeKind, type Schedule } from '../../../src/kubelet/prober/manager.js';
import { resolvePort, runProbe, unsupportedProbe, type ProbeIO } from '../../../src/kubelet/prober/handlers.js';
import type { RuntimePod } from '../../../src/runtime/types.js';

/** Time driven by hand: timers fire only inside advance(), in order, with I/O settled between. */
class ManualClock {
  now = 1_000_000;
  readonly #timers: { at: number; fn: () => void; cancelled: boolean }[] = [];
  readonly schedule: Schedule = (fn, ms) => {
    const timer = { at: this.now + ms, fn, cancelled: false };
    this.#timers.push(timer);
    return () => {
      timer.cancelled = true;
    };
  };
  async advance(ms: number): Promise<void> {
    const end = this.now + ms;
    for (;;) {
      const next = this.#timers.filter((x) => !x.cancelled).sort((a, b) => a.at - b.at)[0];
      if (!next || next.at > end) break;
      this.#timers.splice(this.#timers.indexOf(next), 1);
      this.now = next.at;
      next.fn();
      for (let i = 0; i < 5; i++) await new Promise((r) => setImmediate(r));
    }
    this.now = end;
  }
}

/** A container whose probe answers follow `script` (exit codes), then repeat the last one. */
function scriptedIO(script: number[]): ProbeIO & { calls: number } {
  const io = {
    host: '127.0.0.1',
    calls: 0,
    exec: async () => {
      const code = script[Math.min(io.calls, script.length - 1)] ?? 0;
      io.calls++;
      return { exitCode: code, output: code === 0 ? 'ok' : `exit ${code}` };
    },
    connect: async () => Buffer.alloc(0),
    dial: () => {
      throw new Error('no gRPC probe here');
    },
  };
  return io;
}

function podWith(probes: Partial<Record<'livenessProbe' | 'readinessProbe' | 'startupProbe', object>>): Pod {
  return { metadata: { uid: 'u1', name: 'p', namespace: 'default' }, spec: { containers: [{ name: 'c', image: 'i', ...probes }] } };
}
function runtimeWith(containerId: string, startedAt: number): RuntimePod {
  return {
    uid: 'u1',
    name: 'p',
    namespace: 'default',
    sandboxes: [{ id: 'sb', attempt: 0, ready: true, createdAt: new Date(startedAt), ips: [] }],
    containers: [{ id: containerId, name: 'c', attempt: 0, restartCount: 0, hash: '', image: 'i', imageID: '', state: 'running', createdAt: new Date(startedAt), startedAt: new Date(startedAt) }],
  };
}

function setup(script: number[]) {
  const clock = new ManualClock();
  const io = scriptedIO(script);
  const changes: string[] = [];
  const failures: [ProbeKind, string][] = [];
  const prober = new ProberManager({
    io: () => io,
    onChange: (uid) => changes.push(uid),
    onFailure: (_pod, _c, kind, output) => failures.push([kind, output]),
    schedule: clock.schedule,
    now: () => clock.now,
  });
  return { clock, io, changes, failures, prober };
}

t.test('readiness: not ready until successThreshold passes; failureThreshold failures make it unready again', async (t) => {
  const { clock, io, changes, prober } = setup([0, 0, 1, 1, 1]);
  const pod = podWith({ readinessProbe: { exec: { command: ['true'] }, initialDelaySeconds: 5, periodSeconds: 2, successThreshold: 2, failureThreshold: 3 } });
  prober.syncPod(pod, runtimeWith('c1', clock.now));
  t.equal(prober.isReady('u1', 'c', 'c1'), false, 'readiness starts as failure');
  await clock.advance(4_999);
  t.equal(io.calls, 0, 'nothing before initialDelaySeconds');
  await clock.advance(1);
  t.equal(io.calls, 1);
  t.equal(prober.isReady('u1', 'c', 'c1'), false, 'one success is below successThreshold 2');
  await clock.advance(2_000);
  t.equal(prober.isReady('u1', 'c', 'c1'), true);
  t.same(changes, ['u1'], 'the change is signalled once');
  await clock.advance(4_000);
  t.equal(prober.isReady('u1', 'c', 'c1'), true, 'two failures are below failureThreshold 3');
  await clock.advance(2_000);
  t.equal(prober.isReady('u1', 'c', 'c1'), false);
  t.equal(changes.length, 2);
  t.equal(prober.isReady('u1', 'c', 'other-instance'), undefined, 'another container instance has no result');
});

t.test('liveness: failureThreshold failures mark the instance for restart and stop probing it', async (t) => {
  const { clock, io, failures, prober } = setup([0, 1, 1]);
  const pod = podWith({ livenessProbe: { exec: { command: ['check'] }, periodSeconds: 1, failureThreshold: 2 } });
  prober.syncPod(pod, runtimeWith('c1', clock.now));
  await clock.advance(0);
  t.equal(prober.failed('u1', 'c', 'c1'), undefined, 'liveness starts as success');
  await clock.advance(2_000);
  t.equal(prober.failed('u1', 'c', 'c1'), 'liveness');
  t.same(failures, [['liveness', 'exit 1'], ['liveness', 'exit 1']], 'every failed attempt is reported with its output');
  const calls = io.calls;
  await clock.advance(10_000);
  t.equal(io.calls, calls, 'no more probing of a failed instance');
  prober.syncPod(pod, runtimeWith('c2', clock.now));
  t.equal(prober.failed('u1', 'c', 'c2'), undefined, 'a new instance starts fresh');
  t.equal(prober.size, 1);
});

t.test('startup probe holds liveness and readiness back, then they run at once', async (t) => {
  const { clock, io, prober } = setup([1, 0, 0, 0]);
  const pod = podWith({
    startupProbe: { exec: { command: ['s'] }, periodSeconds: 1, failureThreshold: 30 },
    readinessProbe: { exec: { command: ['r'] }, periodSeconds: 10 },
  });
  prober.syncPod(pod, runtimeWith('c1', clock.now));
  await clock.advance(0);
  t.equal(io.calls, 1, 'only the startup probe ran (failed)');
  t.equal(prober.isStarted('u1', 'c', 'c1'), false);
  t.equal(prober.isReady('u1', 'c', 'c1'), false, 'not ready before started');
  await clock.advance(1_000);
  t.equal(prober.isStarted('u1', 'c', 'c1'), true);
  await clock.advance(0);
  t.equal(prober.isReady('u1', 'c', 'c1'), true, 'readiness ran right after startup passed, not 10 s later');
});

t.test('workers follow the running containers; removePod and stop end them', async (t) => {
  const { clock, prober } = setup([0]);
  const pod = podWith({ livenessProbe: { exec: { command: ['x'] } }, readinessProbe: { tcpSocket: { port: 80 } } });
  prober.syncPod(pod, runtimeWith('c1', clock.now));
  t.equal(prober.size, 2);
  prober.syncPod(pod, { ...runtimeWith('c1', clock.now), containers: [] });
  t.equal(prober.size, 0, 'no running container, no workers');
  prober.syncPod(pod, runtimeWith('c1', clock.now));
  prober.syncPod({ ...pod, metadata: { ...pod.metadata, deletionTimestamp: '2026-01-01T00:00:00Z' } }, runtimeWith('c1', clock.now));
  t.equal(prober.size, 0, 'a terminating pod is not probed');
  prober.syncPod(pod, runtimeWith('c1', clock.now));
  prober.removePod('u1');
  t.equal(prober.size, 0);
  prober.syncPod(podWith({ livenessProbe: { httpGet: { port: 1, host: 'example.com' } } }), runtimeWith('c1', clock.now));
  t.equal(prober.size, 0, 'unsupported probes get no worker');
  prober.stop();
});

t.test('handlers: the host a connection goes to, and the Host header: the IO\'s default (the pod IP), an IP the probe names, localhost as 127.0.0.1', async (t) => {
  const seen: { host: string | undefined; send: string }[] = [];
  const io: ProbeIO = {
    host: '10.244.0.7',
    exec: async () => ({ exitCode: 0, output: '' }),
    dial: () => {
      throw new Error('no gRPC probe here');
    },
    connect: async (_port, send, _timeout, _until, host) => {
      seen.push({ host, send: send.toString() });
      return Buffer.from('HTTP/1.1 200 OK\r\n');
    },
  };
  await runProbe({ httpGet: { port: 8080 } }, [], io);
  await runProbe({ httpGet: { port: 8080, host: '10.244.1.9' } }, [], io);
  await runProbe({ httpGet: { port: 8080, host: 'localhost' } }, [], io);
  await runProbe({ httpGet: { port: 8080, host: 'fd00::5' } }, [], io);
  await runProbe({ tcpSocket: { port: 5432, host: '10.244.1.9' } }, [], io);
  t.same(seen.map((s) => s.host), ['10.244.0.7', '10.244.1.9', '127.0.0.1', 'fd00::5', '10.244.1.9']);
  t.same(seen.slice(0, 4).map((s) => /\r\nHost: ([^\r]*)\r\n/.exec(s.send)?.[1]), ['10.244.0.7:8080', '10.244.1.9:8080', '127.0.0.1:8080', '[fd00::5]:8080']);
  const named = await runProbe({ httpGet: { port: 8080, host: 'example.com' } }, [], io);
  t.equal(named.result, 'failure', 'a named host fails the attempt (hooks; probes are refused before they run)');
  t.equal(seen.length, 5, 'and nothing was dialed');
});

t.test('handlers: exec exit code, HTTP status ranges, TCP connect, named ports, refusals', async (t) => {
  const io = (answer: string | Error): ProbeIO => ({
    host: '127.0.0.1',
    exec: async () => ({ exitCode: 3, output: 'x'.repeat(20_000) }),
    dial: () => {
      throw new Error('no gRPC probe here');
    },
    connect: async (_port, send) => {
      t.ok(send.length === 0 || /^GET \/(healthz)? HTTP\/1.1\r\nHost: 127.0.0.1:8080\r\n/.test(send.toString()));
      if (answer instanceof Error) throw answer;
      return Buffer.from(answer);
    },
  });
  const exec = await runProbe({ exec: { command: ['x'] } }, [], io(''));
  t.same([exec.result, exec.output.length], ['failure', 10 * 1024], 'output bounded to 10 KiB');
  t.equal((await runProbe({ httpGet: { path: '/healthz', port: 'web' } }, [{ name: 'web', containerPort: 8080 }], io('HTTP/1.1 204 No Content\r\n'))).result, 'success');
  t.equal((await runProbe({ httpGet: { path: 'healthz', port: 8080 } }, [], io('HTTP/1.0 302 Found\r\n'))).result, 'success');
  const bad = await runProbe({ httpGet: { path: '/healthz', port: 8080 } }, [], io('HTTP/1.1 500 Oops\r\n'));
  t.same(bad, { result: 'failure', output: 'HTTP probe failed with statuscode: 500' });
  t.equal((await runProbe({ httpGet: { port: 8080 } }, [], io('garbage'))).result, 'failure');
  t.equal((await runProbe({ tcpSocket: { port: 5432 } }, [], io(''))).result, 'success');
  t.same(await runProbe({ tcpSocket: { port: 5432 } }, [], io(new Error('Connection refused'))), { result: 'failure', output: 'Connection refused' });
  t.equal((await runProbe({ tcpSocket: { port: 'nope' } }, [], io(''))).result, 'failure', 'an unknown named port fails');
  t.equal(resolvePort('8080', []), 8080);
  t.equal(resolvePort(70000, []), undefined);
  t.equal(unsupportedProbe({ grpc: { port: 1 } }), undefined, 'gRPC probes run');
  t.equal(unsupportedProbe({ httpGet: { port: 1, host: '10.0.0.1' } }), undefined, 'an IP host is dialed (from inside the pod)');
  t.equal(unsupportedProbe({ tcpSocket: { port: 1, host: 'fd00::1' } }), undefined);
  t.equal(unsupportedProbe({ tcpSocket: { port: 1, host: '[fd00::1]' } }), undefined);
  t.match(unsupportedProbe({ tcpSocket: { port: 1, host: 'example.com' } }), /^tcpSocket probe: host "example.com" is not an IP address: nodelet connects to IP addresses \(or localhost\) only, it resolves no names$/);
  t.match(unsupportedProbe({ httpGet: { port: 1, host: 'svc.cluster.local' } }), /^httpGet probe: host "svc.cluster.local" is not an IP address/);
  t.equal(unsupportedProbe({ httpGet: { port: 1, scheme: 'HTTPS' } }), undefined, 'HTTPS probes run');
  t.match(unsupportedProbe({ httpGet: { port: 1, scheme: 'FTP' } }), /scheme "FTP" is neither HTTP nor HTTPS/);
  t.match(unsupportedProbe({}), /no handler/);
  t.equal(unsupportedProbe({ httpGet: { port: 1, host: 'localhost' } }), undefined);
  // The alpha fields of 1.37 (H2CContainerProbe, GRPCContainerProbeTLS): what nodelet does anyway runs, the rest is refused.
  const probe = (p: Record<string, unknown>) => p as Probe;
  t.equal(unsupportedProbe(probe({ httpGet: { port: 1, protocol: 'HTTP1' } })), undefined, 'protocol HTTP1 is HTTP/1.1, as always');
  t.equal(unsupportedProbe(probe({ httpGet: { port: 1, protocol: 'HTTP2' } })), 'httpGet probe: protocol "HTTP2" is not supported by nodelet (the alpha H2CContainerProbe feature; only HTTP1)');
  t.equal(unsupportedProbe(probe({ httpGet: { port: 1, protocol: null } })), undefined, 'null is unset');
  t.equal(unsupportedProbe(probe({ grpc: { port: 1, mode: 'Plaintext' } })), undefined, 'grpc mode Plaintext is what nodelet does');
  t.equal(unsupportedProbe(probe({ grpc: { port: 1, mode: 'TLS' } })), 'grpc probe: mode "TLS" is not supported by nodelet (the alpha GRPCContainerProbeTLS feature; only Plaintext)');
});
