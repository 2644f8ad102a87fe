import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { controlPlaneMinor } from '../helpers/k8s-pin.js';
import { startClusterNode } from '../helpers/cluster-node.js';
import { CONFORMANCE_REPORT, CONFORMANCE_SCRIPT, CONFORMANCE_SKIP_FILE, focusOn, runCommand } from '../helpers/conformance.js';
import { startControlPlane } from '../helpers/control-plane.js';
import { testDockerHost } from '../helpers/docker.js';

/**
 * A fixed, fast subset of Kubernetes' own [NodeConformance] e2e specs (e2e.test of the control
 * plane's pinned version, scripts/conformance.sh) against one in-process cluster-mode nodelet, so
 * the specs that pass in `npm run conformance` stay passing. Each name is a spec's full text;
 * every one must run and pass (none may be skipped or missing).
 */

const SPECS_1_34 = [
  '[sig-node] Pods should get a host IP [NodeConformance] [Conformance]',
  '[sig-node] Pods should be submitted and removed [NodeConformance] [Conformance]',
  '[sig-node] Pods should support remote command execution over websockets [NodeConformance] [Conformance]',
  '[sig-node] Pods should support retrieving logs from the container over websockets [NodeConformance] [Conformance]',
  '[sig-node] Containers should use the image defaults if command and args are blank [NodeConformance] [Conformance]',
  "[sig-node] Containers should be able to override the image's default command and arguments [NodeConformance] [Conformance]",
  '[sig-node] Kubelet when scheduling a busybox command in a pod should print the output to logs [NodeConformance] [Conformance]',
  '[sig-node] Kubelet when scheduling a busybox command that always fails in a pod should have an terminated reason [NodeConformance] [Conformance]',
  '[sig-node] Variable Expansion should allow composing env vars into new env vars [NodeConformance] [Conformance]',
  '[sig-node] Downward API should provide pod UID as env vars [NodeConformance] [Conformance]',
  "[sig-node] Downward API should provide container's limits.cpu/memory and requests.cpu/memory as env vars [NodeConformance] [Conformance]",
  '[sig-node] RuntimeClass should reject a Pod requesting a non-existent RuntimeClass [NodeConformance] [Conformance]',
  '[sig-storage] ConfigMap should be consumable from pods in volume [NodeConformance] [Conformance]',
  '[sig-storage] Secrets should be consumable from pods in volume [NodeConformance] [Conformance]',
  '[sig-storage] Downward API volume should provide podname only [NodeConformance] [Conformance]',
  '[sig-storage] Projected combined should project all components that make up the projection API [Projection] [NodeConformance] [Conformance]',
  '[sig-node] Kubelet when scheduling an agnhost Pod with hostAliases should write entries to /etc/hosts [NodeConformance] [Conformance]',
  '[sig-node] KubeletManagedEtcHosts should test kubelet managed /etc/hosts file [NodeConformance] [Conformance]',
  '[sig-node] Ephemeral Containers [NodeConformance] will start an ephemeral container in an existing pod [Conformance]',
  "[sig-node] PodOSRejection [NodeConformance] Kubelet [LinuxOnly] should reject pod when the node OS doesn't match pod's OS",
  '[sig-node] Pods should allow activeDeadlineSeconds to be updated [NodeConformance] [Conformance]',
  '[sig-node] Pods should contain environment variables for services [NodeConformance] [Conformance]',
  // Not conformance at 1.34 (the gate is on; three of these are [Conformance] from 1.35): the
  // generation nodelet reports having acted on, and admission's resource fit (OutOfcpu).
  '[sig-node] Pods Extended (pod generation) [Feature:PodObservedGenerationTracking] [FeatureGate:PodObservedGenerationTracking] [Beta] Pod Generation pod generation should start at 1 and increment per update',
  '[sig-node] Pods Extended (pod generation) [Feature:PodObservedGenerationTracking] [FeatureGate:PodObservedGenerationTracking] [Beta] Pod Generation custom-set generation on new pods and graceful delete',
  '[sig-node] Pods Extended (pod generation) [Feature:PodObservedGenerationTracking] [FeatureGate:PodObservedGenerationTracking] [Beta] Pod Generation issue 500 podspec updates and verify generation and observedGeneration eventually converge',
  '[sig-node] Pods Extended (pod generation) [Feature:PodObservedGenerationTracking] [FeatureGate:PodObservedGenerationTracking] [Beta] Pod Generation pod rejected by kubelet should have updated generation and observedGeneration',
  '[sig-node] Pods Extended (pod generation) [Feature:PodObservedGenerationTracking] [FeatureGate:PodObservedGenerationTracking] [Beta] Pod Generation pod observedGeneration field set in pod conditions',
];

/** The same specs as v1.37.2 names them (most tags moved to the end). */
const SPECS_1_37 = [
  '[sig-node] Pods should get a host IP [Conformance] [NodeConformance]',
  '[sig-node] Pods should be submitted and removed [Conformance] [NodeConformance]',
  '[sig-node] Pods should support remote command execution over websockets [Conformance] [NodeConformance]',
  '[sig-node] Pods should support retrieving logs from the container over websockets [Conformance] [NodeConformance]',
  '[sig-node] Containers should use the image defaults if command and args are blank [Conformance] [NodeConformance]',
  "[sig-node] Containers should be able to override the image's default command and arguments [Conformance] [NodeConformance]",
  '[sig-node] Kubelet when scheduling a busybox command in a pod should print the output to logs [Conformance] [NodeConformance]',
  '[sig-node] Kubelet when scheduling a busybox command that always fails in a pod should have an terminated reason [Conformance] [NodeConformance]',
  '[sig-node] Variable Expansion should allow composing env vars into new env vars [Conformance] [NodeConformance]',
  '[sig-node] Downward API should provide pod UID as env vars [Conformance] [NodeConformance]',
  "[sig-node] Downward API should provide container's limits.cpu/memory and requests.cpu/memory as env vars [Conformance] [NodeConformance]",
  '[sig-node] RuntimeClass should reject a Pod requesting a non-existent RuntimeClass [Conformance] [NodeConformance]',
  '[sig-storage] ConfigMap should be consumable from pods in volume [Conformance] [NodeConformance]',
  '[sig-storage] Secrets should be consumable from pods in volume [Conformance] [NodeConformance]',
  '[sig-storage] Downward API volume should provide podname only [Conformance] [NodeConformance]',
  '[sig-storage] Projected combined should project all components that make up the projection API [Projection] [Conformance] [NodeConformance]',
  '[sig-node] Kubelet when scheduling an agnhost Pod with hostAliases should write entries to /etc/hosts [Conformance] [NodeConformance]',
  '[sig-node] KubeletManagedEtcHosts should test kubelet managed /etc/hosts file [Conformance] [NodeConformance]',
  '[sig-node] Ephemeral Containers will start an ephemeral container in an existing pod [Conformance] [NodeConformance]',
  "[sig-node] PodOSRejection Kubelet [LinuxOnly] should reject pod when the node OS doesn't match pod's OS [NodeConformance]",
  '[sig-node] Pods should allow activeDeadlineSeconds to be updated [Conformance] [NodeConformance]',
  '[sig-node] Pods should contain environment variables for services [Conformance] [NodeConformance]',
  // Not conformance at 1.34 (the gate is on; three of these are [Conformance] from 1.35): the
  // generation nodelet reports having acted on, and admission's resource fit (OutOfcpu).
  '[sig-node] Pods Extended (pod generation) Pod Generation pod generation should start at 1 and increment per update [MinimumKubeletVersion:1.34] [Conformance]',
  '[sig-node] Pods Extended (pod generation) Pod Generation custom-set generation on new pods and graceful delete [Conformance]',
  '[sig-node] Pods Extended (pod generation) Pod Generation issue 500 podspec updates and verify generation and observedGeneration eventually converge [MinimumKubeletVersion:1.34] [Conformance]',
  // v1.37.2 has no "pod rejected by kubelet should have updated generation" spec any more.
  '[sig-node] Pods Extended (pod generation) Pod Generation pod observedGeneration field set in pod conditions',
];
/** The control plane's pin picks the list (NODELET_K8S=1.34: the previous pin's names). */
const SPECS = controlPlaneMinor() === '1.34' ? SPECS_1_34 : SPECS_1_37;

t.setTimeout(15 * 60_000);

t.test('a subset of [NodeConformance] passes against a cluster-mode nodelet', async (t) => {
  // Cached by version; .ci/run builds them before the tests so the cold build shows on its own.
  const built = await runCommand(CONFORMANCE_SCRIPT, ['build-e2e'], 60 * 60_000);
  t.equal(built.code, 0, 'scripts/conformance.sh build-e2e', { stderr: built.stderr });
  const bin = built.stdout.trim().split('\n').pop() ?? '';
  const images = await runCommand(CONFORMANCE_SCRIPT, ['images'], 5 * 60_000, { ...process.env, DOCKER_HOST: testDockerHost() });
  t.equal(images.code, 0, 'the e2e images are built locally', { stderr: images.stderr });

  const cp = await startControlPlane(t);
  const node = await startClusterNode(t, cp, { nodeName: `conf-${Math.random().toString(16).slice(2, 8)}` });
  const wait = await cp.kubectl(['wait', '--for=condition=Ready', `node/${node.nodeName}`, '--timeout=60s']);
  t.equal(wait.code, 0, 'the node is Ready', { stderr: wait.stderr });

  const out = await mkdtemp(join(tmpdir(), 'nodelet-conformance-'));
  t.teardown(() => rm(out, { recursive: true, force: true }));
  const focus = focusOn(SPECS);
  const e2e = await runCommand(
    join(bin, 'e2e.test'),
    [
      `--kubeconfig=${cp.adminKubeconfig}`,
      '--provider=skeleton',
      `--report-dir=${out}`,
      `--e2e-output-dir=${out}`,
      '--prepull-images=false',
      '--disable-log-dump',
      `--ginkgo.focus=${focus}`,
      '--ginkgo.no-color',
      '--ginkgo.timeout=10m',
    ],
    12 * 60_000,
    { ...process.env, HOME: out },
  );
  t.equal(e2e.code, 0, 'e2e.test passes', { output: e2e.stdout.slice(-8000) + e2e.stderr.slice(-4000) });

  const summary = await runCommand(process.execPath, [CONFORMANCE_REPORT, 'summary', join(out, 'junit_01.xml'), CONFORMANCE_SKIP_FILE, '--focus', focus], 30_000);
  t.equal(summary.code, 0, 'report.mjs finds no failure', { output: summary.stdout + summary.stderr });
  t.match(summary.stdout, new RegExp(`^${SPECS.length} passed, 0 failed, 0 skipped$`, 'm'), `all ${SPECS.length} specs ran and passed`);
  for (const spec of SPECS) {
    t.match(summary.stdout, `| ${spec} | passed |`, spec);
  }
});
