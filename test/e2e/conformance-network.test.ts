import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { controlPlaneMinor } from '../helpers/k8s-pin.js';
import { CONFORMANCE_SCRIPT, focusOn, runCommand } from '../helpers/conformance.js';

/**
 * A fixed, fast subset of Kubernetes' own networking, Service and DNS `[Conformance]` specs (and
 * the image-pull specs) run by `scripts/conformance.sh run --suite full` itself: the whole test
 * cluster inside a network namespace of its own with no way out — the control plane, two nodelet
 * nodes with CNI bridges, kube-proxy, CoreDNS behind kube-dns, and the run's own image registry
 * that every pod's image is pulled from — so what the full run proves about pod IPs, Services,
 * cluster DNS and image pulls stays proven in CI. Each name is a spec's full text; every one must
 * run and pass (none may be skipped or missing). Needs root (a network namespace, a Docker engine
 * of its own), like the run.
 */

const SPECS_1_34 = [
  '[sig-network] DNS should provide DNS for the cluster [Conformance]',
  '[sig-network] DNS should provide DNS for services [Conformance]',
  '[sig-network] DNS should provide /etc/hosts entries for the cluster [Conformance]',
  '[sig-network] DNS should provide DNS for pods for Hostname [Conformance]',
  '[sig-network] DNS should resolve DNS of partial qualified names for services [LinuxOnly] [Conformance]',
  '[sig-network] DNS should support configurable pod DNS nameservers [Conformance]',
  '[sig-network] Networking Granular Checks: Pods should function for intra-pod communication: http [NodeConformance] [Conformance]',
  '[sig-network] Networking Granular Checks: Pods should function for intra-pod communication: udp [NodeConformance] [Conformance]',
  '[sig-network] Networking Granular Checks: Pods should function for node-pod communication: http [LinuxOnly] [NodeConformance] [Conformance]',
  '[sig-network] Networking Granular Checks: Pods should function for node-pod communication: udp [LinuxOnly] [NodeConformance] [Conformance]',
  '[sig-network] Services should serve a basic endpoint from pods [Conformance]',
  '[sig-network] Services should serve multiport endpoints from pods [Conformance]',
  '[sig-network] Services should serve endpoints on same port and different protocols [Conformance]',
  '[sig-network] Services should be able to create a functioning NodePort service [Conformance]',
  '[sig-network] Services should be able to change the type from ClusterIP to ExternalName [Conformance]',
  '[sig-network] HostPort validates that there is no conflict between pods with same hostPort but different hostIP and protocol [LinuxOnly] [Conformance]',
  '[sig-network] Proxy version v1 should proxy through a service and a pod [Conformance]',
  '[sig-node] Container Runtime blackbox test when running a container with a new image should be able to pull image [NodeConformance]',
  '[sig-node] Container Runtime blackbox test when running a container with a new image should not be able to pull from private registry without secret [NodeConformance]',
];

/** The same specs as v1.37.2 names them (most tags moved to the end). */
const SPECS_1_37 = [
  '[sig-network] DNS should provide DNS for the cluster [Conformance]',
  '[sig-network] DNS should provide DNS for services [Conformance]',
  '[sig-network] DNS should provide /etc/hosts entries for the cluster [Conformance]',
  '[sig-network] DNS should provide DNS for pods for Hostname [Conformance]',
  '[sig-network] DNS should resolve DNS of partial qualified names for services [LinuxOnly] [Conformance]',
  '[sig-network] DNS should support configurable pod DNS nameservers [Conformance]',
  '[sig-network] Networking Granular Checks: Pods should function for intra-pod communication: http [Conformance] [NodeConformance]',
  '[sig-network] Networking Granular Checks: Pods should function for intra-pod communication: udp [Conformance] [NodeConformance]',
  '[sig-network] Networking Granular Checks: Pods should function for node-pod communication: http [LinuxOnly] [Conformance] [NodeConformance]',
  '[sig-network] Networking Granular Checks: Pods should function for node-pod communication: udp [LinuxOnly] [Conformance] [NodeConformance]',
  '[sig-network] Services should serve a basic endpoint from pods [Conformance]',
  '[sig-network] Services should serve multiport endpoints from pods [Conformance]',
  '[sig-network] Services should serve endpoints on same port and different protocols [Conformance]',
  '[sig-network] Services should be able to create a functioning NodePort service [Conformance]',
  '[sig-network] Services should be able to change the type from ClusterIP to ExternalName [Conformance]',
  '[sig-network] HostPort validates that there is no conflict between pods with same hostPort but different hostIP and protocol [LinuxOnly] [Conformance]',
  '[sig-network] Proxy version v1 should proxy through a service and a pod [Conformance]',
  '[sig-node] Container Runtime blackbox test when running a container with a new image should be able to pull image [NodeConformance] [Serial]',
  '[sig-node] Container Runtime blackbox test when running a container with a new image should not be able to pull from private registry without secret [NodeConformance] [Serial]',
];
/** The control plane's pin picks the list (NODELET_K8S=1.34: the previous pin's names). */
const SPECS = controlPlaneMinor() === '1.34' ? SPECS_1_34 : SPECS_1_37;

t.setTimeout(25 * 60_000);

t.test('networking, Service, DNS and image-pull conformance specs pass in the sealed test cluster', async (t) => {
  const out = await mkdtemp(join(tmpdir(), 'nodelet-conformance-network-'));
  // Kept when the run fails: its component logs are the diagnosis.
  t.teardown(() => (t.passing() ? rm(out, { recursive: true, force: true }) : t.comment(`logs kept in ${out}`)));
  const env = {
    ...process.env,
    CONFORMANCE_FOCUS: focusOn(SPECS),
    CONFORMANCE_NODES: '2',
    CONFORMANCE_TIMEOUT: '15m',
  };
  const conf = await runCommand(CONFORMANCE_SCRIPT, ['run', '--suite', 'full', out], 22 * 60_000, env);
  // The summary (summary.md, also printed) lists every spec that ran with its result.
  const summary = conf.stdout;
  t.equal(conf.code, 0, 'scripts/conformance.sh run passes', { output: summary.slice(-6000) + conf.stderr.slice(-6000) });
  t.match(summary, new RegExp(`^${SPECS.length} passed, 0 failed, 0 skipped$`, 'm'), `all ${SPECS.length} specs ran and passed`);
  for (const spec of SPECS) {
    t.match(summary, `| ${spec} | passed |`, spec);
  }
});
