import { isStaticPod } from '../api/annotations.js';
import { getPodQOS } from '../api/qos.js';
import type { Pod, PodStatus } from '../api/types.js';
import { resourceFitRefusal } from './resource-fit.js';
import { sysctlRefusal } from './security-context.js';
import { fitsNodeName, matchesRequiredNodeAffinity, untoleratedNoExecuteTaint, type AdmissionNode } from './node-admission.js';

/** Why the kubelet refuses to run a pod at all (`canAdmitPod`): the reason and message of its `Failed` status. */
export interface AdmissionRefusal {
  readonly reason: string;
  readonly message: string;
}

/**
 * The kubelet's admission handlers that apply to a Linux Docker node, in its order: the pod's
 * OS (`spec.os.name`, then a `kubernetes.io/os` node selector) must be linux, its sysctls must be
 * allowed, it must fit in the node's `allocatable` beside the pods admitted before it
 * (`admitted`; `resourceFitRefusal`: `OutOfcpu`, `OutOfpods`, …); then, against `node`, its
 * `nodeSelector` and required node affinity must match the node (`NodeAffinity`) and its
 * `spec.nodeName` must be unset or the node's (`NodeName`); its host ports must be free among the
 * admitted pods (`NodePorts`); and a pod that is not static must tolerate every NoExecute taint of
 * the node (`TaintToleration`) — pkg/kubelet/lifecycle/predicate.go `generalFilter` over
 * pkg/scheduler/eventhandlers.go `AdmissionCheck`, which reports the first failure. A refused pod
 * never gets a sandbox; it fails with the handler's reason. `allocatable` is the node's as last
 * built; before the first build there is nothing to fit against and resources are not checked.
 * `node` is the Node the kubelet's `getNodeAnyWay` reads (the apiserver's copy, else the one it
 * registers); without one the node checks are skipped.
 */
export function admissionRefusal(pod: Pod, admitted: readonly Pod[] = [], allocatable?: Readonly<Record<string, string>>, node?: AdmissionNode): AdmissionRefusal | undefined {
  const os = pod.spec?.os?.name;
  if (os !== undefined && os !== 'linux') return { reason: 'PodOSNotSupported', message: "Failed to admit pod as the OS field doesn't match node OS" };
  const selected = pod.spec?.nodeSelector?.['kubernetes.io/os'];
  if (selected !== undefined && selected !== 'linux') {
    return { reason: 'PodOSSelectorNodeLabelDoesNotMatch', message: "Failed to admit pod as the `kubernetes.io/os` label doesn't match node label" };
  }
  const sysctl = sysctlRefusal(pod);
  if (sysctl) return { reason: 'SysctlForbidden', message: sysctl };
  const fit = allocatable ? resourceFitRefusal(pod, admitted, allocatable) : undefined;
  if (fit) return fit;
  // pkg/kubelet/lifecycle/predicate.go: reason = PredicateName, message = PredicateFailureError.Error()
  // ("Predicate %s failed: %s"), with the plugins' ErrReason strings.
  if (node && !matchesRequiredNodeAffinity(pod, node)) {
    // pkg/scheduler/framework/plugins/nodeaffinity/node_affinity.go ErrReasonPod.
    return { reason: 'NodeAffinity', message: "Predicate NodeAffinity failed: node(s) didn't match Pod's node affinity/selector" };
  }
  if (node && !fitsNodeName(pod, node)) {
    // pkg/scheduler/framework/plugins/nodename/node_name.go ErrReason.
    return { reason: 'NodeName', message: "Predicate NodeName failed: node(s) didn't match the requested node name" };
  }
  const wanted = hostPortsOf(pod);
  if (wanted.length && admitted.some((other) => hostPortsOf(other).some((used) => wanted.some((w) => portsConflict(w, used))))) {
    return { reason: 'NodePorts', message: "Predicate NodePorts failed: node(s) didn't have free ports for the requested pod ports" };
  }
  if (node && !isStaticPod(pod) && untoleratedNoExecuteTaint(node.spec?.taints ?? [], pod.spec?.tolerations ?? [])) {
    // pkg/scheduler/framework/plugins/tainttoleration/taint_toleration.go ErrReasonNotMatch.
    return { reason: 'TaintToleration', message: "Predicate TaintToleration failed: node(s) had taints that the pod didn't tolerate" };
  }
  return undefined;
}

/**
 * The status of a pod the node will not run (the kubelet's `rejectPod`, pkg/kubelet/kubelet.go):
 * `Failed` with the refusal's reason and "Pod was rejected: <message>", and the pod's QoS class
 * (left out when a pod refused as invalid has no class to compute).
 */
export function rejectedStatus(pod: Pod, refusal: AdmissionRefusal): PodStatus {
  let qosClass: string | undefined;
  try {
    qosClass = getPodQOS(pod);
  } catch {
    qosClass = undefined;
  }
  return { ...(qosClass ? { qosClass } : {}), phase: 'Failed', reason: refusal.reason, message: `Pod was rejected: ${refusal.message}` };
}

/** One host port a pod holds on the node: address (`0.0.0.0` for all), protocol, port. */
export interface HostPort {
  readonly ip: string;
  readonly protocol: string;
  readonly port: number;
}

/**
 * The host ports of a pod's containers, init containers included, as the scheduler's NodePorts
 * plugin reads them (pkg/scheduler/framework/plugins/nodeports/node_ports.go `getContainerPorts`;
 * `HostPortInfo.sanitize`: an empty hostIP is 0.0.0.0, an empty protocol TCP).
 */
export function hostPortsOf(pod: Pod): HostPort[] {
  const out: HostPort[] = [];
  for (const c of [...(pod.spec?.initContainers ?? []), ...(pod.spec?.containers ?? [])]) {
    for (const p of c.ports ?? []) {
      if (!p.hostPort) continue;
      out.push({ ip: p.hostIP || '0.0.0.0', protocol: p.protocol || 'TCP', port: p.hostPort });
    }
  }
  return out;
}

/** `HostPortInfo.CheckConflict`: same protocol and port, and the same address or either one 0.0.0.0. */
export function portsConflict(a: HostPort, b: HostPort): boolean {
  if (a.port !== b.port || a.protocol !== b.protocol) return false;
  return a.ip === b.ip || a.ip === '0.0.0.0' || b.ip === '0.0.0.0';
}
