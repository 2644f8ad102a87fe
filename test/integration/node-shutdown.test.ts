import t from 'tap';
import type { Pod } from '../../src/api/types.js';
import { BUSYBOX, dockerCLI } from '../helpers/docker.js';
import { startTestNode } from '../helpers/nodelet.js';

/**
 * Graceful node shutdown (`shutdownGracePeriod` 10 s, `shutdownGracePeriodCriticalPods` 4 s) on the
 * real engine: the regular pod is stopped first, its preStop hook run, with its grace period cut
 * to the group's 6 s; the critical pod (system-critical priority) only after it; both end
 * `Failed`, reason `Terminated`, with `DisruptionTarget`; a pod arriving afterwards is rejected
 * with `NodeShutdown`. Without the setting nodelet's stop leaves pods running (static-pods test).
 */
t.setTimeout(120_000);

const pod = (name: string, extra: string) => `apiVersion: v1
kind: Pod
metadata: { name: ${name} }
spec:
  terminationGracePeriodSeconds: 30
${extra}  containers:
    - name: c
      image: ${BUSYBOX}
      imagePullPolicy: Never
      # Exits a second after SIGTERM, so the order of the stops shows in the finish times.
      command: ["sh", "-c", "trap 'sleep 1; exit 0' TERM; echo up; while true; do sleep 0.2; done"]
      lifecycle: { preStop: { exec: { command: ["sh", "-c", "echo prestop > /dev/termination-log"] } } }
`;

t.test('pods stopped by priority group, reported Failed/Terminated; new pods rejected', async (t) => {
  const node = await startTestNode(t, { shutdownGracePeriodMs: 10_000, shutdownGracePeriodCriticalPodsMs: 4_000 });
  await node.writeManifest('regular.yaml', pod('regular', ''));
  await node.writeManifest('critical.yaml', pod('critical', '  priority: 2000001000\n  priorityClassName: system-node-critical\n'));
  const running = async (name: string) => node.waitFor(`${name} running`, async () => {
    const p = await node.pod(name);
    return p?.status?.containerStatuses?.[0]?.state?.running ? p : undefined;
  }, 60_000);
  const [regular, critical] = await Promise.all([running('regular'), running('critical')]);
  const idOf = (p: Pod) => p.status?.containerStatuses?.[0]?.containerID?.replace(/^\w+:\/\//, '') ?? '';

  const started = Date.now();
  await node.nodelet.shutdown();
  const took = Date.now() - started;
  t.ok(took < 10_000, `done within the 10 s grace period (${took} ms)`);

  const finished = async (p: Pod) => {
    const [state, at] = (await dockerCLI('inspect', '--format', '{{.State.Status}} {{.State.FinishedAt}}', idOf(p))).trim().split(' ');
    return { state, at: Date.parse(at ?? '') };
  };
  const [r, c] = await Promise.all([finished(regular), finished(critical)]);
  t.same([r.state, c.state], ['exited', 'exited'], 'both containers stopped');
  t.ok(c.at >= r.at, `the critical pod stopped after the regular one (${c.at - r.at} ms later)`);

  for (const name of ['regular', 'critical']) {
    const p = await node.waitFor(`${name} reported`, async () => {
      const x = await node.pod(name);
      return x?.status?.phase === 'Failed' ? x : undefined;
    });
    t.same([p.status?.reason, p.status?.message], ['Terminated', 'Pod was terminated in response to imminent node shutdown.'], `${name}: the shutdown manager's reason and message`);
    const d = p.status?.conditions?.find((x) => x.type === 'DisruptionTarget');
    t.same([d?.status, d?.reason], ['True', 'TerminationByKubelet'], `${name}: DisruptionTarget`);
    t.equal(p.status?.containerStatuses?.[0]?.state?.terminated?.message?.trim(), 'prestop', `${name}: its preStop hook ran`);
  }

  await node.writeManifest('late.yaml', pod('late', ''));
  const late = await node.waitFor('late rejected', async () => {
    const x = await node.pod('late');
    return x?.status?.phase === 'Failed' ? x : undefined;
  });
  t.same([late.status?.reason, late.status?.message], ['NodeShutdown', 'Pod was rejected: Pod was rejected as the node is shutting down.'], 'a pod arriving during the shutdown is rejected');
});
