import t from 'tap';
import { BUSYBOX } from '../helpers/docker.js';
import { kubectlFor } from '../helpers/kubectl.js';
import { startTestNode } from '../helpers/nodelet.js';

const manifest = `apiVersion: v1
kind: Pod
metadata: { name: busy, labels: { app: busy } }
spec:
  terminationGracePeriodSeconds: 0
  containers:
    - name: loop
      image: ${BUSYBOX}
      imagePullPolicy: IfNotPresent
      command: ["sh", "-c", "while :; do sleep 0.05; done"]
`;

t.test('kubectl top pod against nodelet', async (t) => {
  const node = await startTestNode(t);
  await node.writeManifest('busy.yaml', manifest);
  const name = `busy-${node.nodeName}`;
  await node.waitFor('pod running', async () => ((await node.pod('busy'))?.status?.phase === 'Running' ? true : undefined), 60_000);
  await node.waitFor('the PLEG sees the container', () =>
    node.nodelet.kubelet.runtimePods().some((p) => p.containers.some((c) => c.state === 'running')) ? true : undefined,
  );
  // kubectl top shows a rate, which needs two samples; take them now rather than waiting 10 s.
  await node.nodelet.stats.sampleNow();
  // A measurement interval, not synchronisation: the rate's two samples must be apart in time.
  await new Promise((r) => setTimeout(r, 1000));
  await node.nodelet.stats.sampleNow();
  await node.waitFor('pod metrics served', async () => ((await node.get(`/apis/metrics.k8s.io/v1beta1/namespaces/default/pods/${name}`)).status === 200 ? true : undefined));

  for (const version of ['1.27', '1.33']) {
    t.test(`kubectl ${version}`, async (t) => {
      const kubectl = await kubectlFor(t, version, node.url);
      const row = new RegExp(`^${name}\\s+\\d+m\\s+\\d+Mi\\s*$`, 'm');

      const all = await kubectl.run('top', 'pod');
      t.equal(all.code, 0, all.stderr);
      t.match(all.stdout, /^NAME\s+CPU\(cores\)\s+MEMORY\(bytes\)\s*\n/);
      t.match(all.stdout, row);

      const one = await kubectl.run('top', 'pod', name);
      t.equal(one.code, 0, one.stderr);
      t.match(one.stdout, row);

      const selected = await kubectl.run('top', 'pod', '-l', 'app=busy', '--containers');
      t.equal(selected.code, 0, selected.stderr);
      t.match(selected.stdout, /^POD\s+NAME\s+CPU\(cores\)\s+MEMORY\(bytes\)\s*\n/);
      t.match(selected.stdout, new RegExp(`^${name}\\s+loop\\s+\\d+m\\s+\\d+Mi\\s*$`, 'm'));

      const missing = await kubectl.run('top', 'pod', 'nopod');
      t.not(missing.code, 0);
      t.match(missing.stderr, /NotFound|not found/);

      // Full discovery now walks /apis/metrics.k8s.io/v1beta1 too; it must not complain.
      const get = await kubectl.run('get', 'pods', '-v=0');
      t.equal(get.code, 0, get.stderr);
      t.equal(get.stderr, '', 'no discovery warnings');
    });
  }
});
