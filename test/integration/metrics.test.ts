import t from 'tap';
import { BUSYBOX } from '../helpers/docker.js';
import { kubectlFor } from '../helpers/kubectl.js';
import { startTestNode } from '../helpers/nodelet.js';

t.test('/metrics reports the node with the kubelet names after a pod starts', async (t) => {
  const node = await startTestNode(t);
  await node.writeManifest('m.yaml', `apiVersion: v1
kind: Pod
metadata: { name: m }
spec:
  terminationGracePeriodSeconds: 0
  containers:
    - { name: a, image: ${BUSYBOX}, imagePullPolicy: Never, command: ["sleep", "600"] }
    - { name: b, image: ${BUSYBOX}, imagePullPolicy: Never, command: ["sleep", "600"] }
`);
  await node.waitFor('pod running', async () => ((await node.pod('m'))?.status?.phase === 'Running' ? true : undefined));
  await node.get('/pods');
  const res = await fetch(`${node.url}/metrics`);
  t.equal(res.status, 200);
  const text = await res.text();
  const value = (pattern: string) => {
    const m = new RegExp(`^${pattern} (\\S+)$`, 'm').exec(text);
    return m ? Number(m[1]) : undefined;
  };
  t.equal(value('kubelet_running_pods'), 1);
  t.equal(value('kubelet_running_containers\\{container_state="running"\\}'), 2, 'containers, not sandboxes (those are kubelet_running_pods)');
  t.equal(value('kubelet_started_pods_total'), 1);
  t.equal(value('kubelet_started_containers_total\\{container_type="container"\\}'), 2);
  t.ok((value('kubelet_runtime_operations_total\\{operation_type="list_containers"\\}') ?? 0) >= 1);
  t.ok((value('kubelet_runtime_operations_total\\{operation_type="start_container"\\}') ?? 0) === 2);
  t.equal(value('kubelet_runtime_operations_total\\{operation_type="create_container"\\}'), 1, 'the first container created apart, while its sandbox started');
  t.equal(value('kubelet_pod_start_duration_seconds_count'), 1);
  t.ok((value('kubelet_http_requests_total\\{method="GET",path="pods",server_type="readwrite",long_running="false"\\}') ?? 0) >= 1);
  t.equal(value('nodelet_streaming_sessions'), 0);
});

t.test('kubelet_http_inflight_requests comes back to 0 after exec sessions (kubectl 1.27 and 1.33)', async (t) => {
  const node = await startTestNode(t);
  await node.writeManifest('m.yaml', `apiVersion: v1
kind: Pod
metadata: { name: m }
spec:
  terminationGracePeriodSeconds: 0
  containers:
    - { name: a, image: ${BUSYBOX}, imagePullPolicy: Never, command: ["sleep", "600"] }
`);
  await node.waitFor('pod running', async () => ((await node.pod('m'))?.status?.phase === 'Running' ? true : undefined));
  const pod = `m-${node.nodeName}`;
  /** The in-flight count of every long-running series (exec, attach, portforward) summed. */
  const longRunningInflight = async () => {
    const text = await (await fetch(`${node.url}/metrics`)).text();
    return [...text.matchAll(/^kubelet_http_inflight_requests\{[^}]*long_running="true"[^}]*\} (\d+)$/gm)].reduce((sum, m) => sum + Number(m[1]), 0);
  };
  t.equal(await longRunningInflight(), 0, 'none before');
  for (const version of ['1.27', '1.33']) {
    const kubectl = await kubectlFor(t, version, node.url);
    for (let i = 0; i < 3; i++) {
      const r = await kubectl.run('exec', pod, '-c', 'a', '--', 'true');
      t.equal(r.code, 0, `${version}: exec ${i} ran (${r.stderr.trim()})`);
    }
  }
  // The session's end is its socket's close, which follows kubectl's exit by a moment.
  await node.waitFor('in-flight long-running requests back to 0', async () => ((await longRunningInflight()) === 0 ? true : undefined));
  t.pass('six exec sessions, none left in flight');
});
