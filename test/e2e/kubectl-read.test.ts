import t from 'tap';
import type { Pod, PodList } from '../../src/api/types.js';
import { BUSYBOX } from '../helpers/docker.js';
import { kubectlFor } from '../helpers/kubectl.js';
import { startTestNode } from '../helpers/nodelet.js';

const manifest = `apiVersion: v1
kind: Pod
metadata: { name: web }
spec:
  terminationGracePeriodSeconds: 1
  containers:
    - name: httpd
      image: ${BUSYBOX}
      imagePullPolicy: IfNotPresent
      command: ["httpd", "-f", "-p", "8080", "-h", "/www"]
`;

t.test('kubectl reads pods from nodelet', async (t) => {
  const node = await startTestNode(t);
  await node.writeManifest('web.yaml', manifest);
  const name = `web-${node.nodeName}`;
  await node.waitFor('pod running', async () => ((await node.pod('web'))?.status?.phase === 'Running' ? true : undefined));

  for (const version of ['1.27', '1.33']) {
    t.test(`kubectl ${version}`, async (t) => {
      const kubectl = await kubectlFor(t, version, node.url);

      const get = await kubectl.run('get', 'pods');
      t.equal(get.code, 0, get.stderr);
      t.match(get.stdout, /^NAME\s+READY\s+STATUS\s+RESTARTS\s+AGE\n/);
      t.match(get.stdout, new RegExp(`${name}\\s+1/1\\s+Running\\s+0\\s+\\d+s`));

      const json = await kubectl.run('get', 'pod', name, '-o', 'json');
      t.equal(json.code, 0, json.stderr);
      const pod = JSON.parse(json.stdout) as Pod;
      t.equal(pod.metadata?.name, name);
      t.equal(pod.status?.containerStatuses?.[0]?.name, 'httpd');

      const describe = await kubectl.run('describe', 'pod', name);
      t.equal(describe.code, 0, describe.stderr);
      t.match(describe.stdout, new RegExp(`Name:\\s+${name}`));
      t.match(describe.stdout, /Status:\s+Running/);
      t.match(describe.stdout, /Events:[\s\S]*Started\s+.*Started container httpd/);

      const raw = await kubectl.run('get', '--raw', '/pods');
      t.equal(raw.code, 0, raw.stderr);
      const list = JSON.parse(raw.stdout) as PodList;
      t.equal(list.kind, 'PodList');
      t.ok(list.items.some((p) => p.metadata?.name === name));

      const missing = await kubectl.run('get', 'pod', 'nopod');
      t.equal(missing.code, 1);
      t.match(missing.stderr, /Error from server \(NotFound\): pods "nopod" not found/);
    });
  }
});
