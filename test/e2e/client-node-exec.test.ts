import { PassThrough, Writable } from 'node:stream';
import * as k8s from '@kubernetes/client-node';
import t from 'tap';
import { execPodManifest } from '../helpers/exec-suite.js';
import { startTestNode } from '../helpers/nodelet.js';
import { upgradesDuring } from '../helpers/streaming-metrics.js';

/** Collects what a stream receives. */
function sink(): { stream: Writable; text: () => string } {
  const chunks: Buffer[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _e, done) {
      chunks.push(Buffer.from(chunk));
      done();
    },
  });
  return { stream, text: () => Buffer.concat(chunks).toString('utf8') };
}

t.test('@kubernetes/client-node Exec and Attach (WebSocket, offering v5…v1)', async (t) => {
  const node = await startTestNode(t);
  await node.writeManifest('shell.yaml', execPodManifest);
  const pod = await node.waitFor('pod running', async () => {
    const p = await node.pod('shell');
    return p?.status?.containerStatuses?.every((c) => c.state?.running) ? (p.metadata?.name ?? '') : undefined;
  }, 30_000);
  const kc = new k8s.KubeConfig();
  kc.loadFromOptions({
    clusters: [{ name: 'nodelet', server: node.url, skipTLSVerify: true }],
    users: [{ name: 'nodelet' }],
    contexts: [{ name: 'nodelet', cluster: 'nodelet', user: 'nodelet' }],
    currentContext: 'nodelet',
  });

  const exec = (command: string[], stdin: PassThrough | null = null) =>
    new Promise<{ out: string; err: string; status: k8s.V1Status }>((resolve, reject) => {
      const out = sink();
      const err = sink();
      new k8s.Exec(kc)
        .exec('default', pod, 'app', command, out.stream, err.stream, stdin, false, (status) => {
          // The status arrives before the socket closes; give the last frames a moment.
          setTimeout(() => resolve({ out: out.text(), err: err.text(), status }), 50);
        })
        .catch(reject);
    });

  const { result: ok, upgrades } = await upgradesDuring(node.url, () => exec(['sh', '-c', 'echo hello; echo oops >&2']));
  t.same(upgrades, { 'exec websocket v5.channel.k8s.io': 1 }, 'one WebSocket v5 session, as nodelet counted it');
  t.equal(ok.out, 'hello\n');
  t.equal(ok.err, 'oops\n');
  t.equal(ok.status.status, 'Success');

  const failed = await exec(['sh', '-c', 'exit 7']);
  t.equal(failed.status.status, 'Failure');
  t.equal(failed.status.reason, 'NonZeroExitCode');
  t.same(failed.status.details?.causes, [{ reason: 'ExitCode', message: '7' }]);

  const stdin = new PassThrough();
  const echoed = exec(['cat'], stdin);
  stdin.end('round trip\n');
  t.equal((await echoed).out, 'round trip\n');

  // Attach to `catter`: what it reads on stdin comes back on stdout.
  const out = sink();
  const attachIn = new PassThrough();
  const ws = await new k8s.Attach(kc).attach('default', pod, 'catter', out.stream, null, attachIn, false);
  attachIn.write('via attach\n');
  await node.waitFor('attach output', () => (out.text().includes('via attach') ? true : undefined), 10_000);
  ws.close();
  t.match(out.text(), /via attach/);
  await node.waitFor('sessions closed', () => (node.nodelet.sessions.size === 0 ? true : undefined), 10_000);
});
