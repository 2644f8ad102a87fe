import type { Pod } from '../api/types.js';
import { sysctlRefusal } from './security-context.js';

/** Why the kubelet refuses to run a pod at all (`canAdmitPod`): the reason and message of its `Failed` status. */
export interface AdmissionRefusal {
  readonly reason: string;
  readonly message: string;
}

/**
 * The kubelet's admission handlers that apply to a Linux Docker node, in its order: the pod's
 * OS (`spec.os.name`, then a `kubernetes.io/os` node selector) must be linux, and its sysctls
 * must be allowed. A refused pod never gets a sandbox; it fails with the handler's reason.
 * (Resource fit and node affinity are the scheduler's and are not re-checked here.)
 */
export function admissionRefusal(pod: Pod): AdmissionRefusal | undefined {
  const os = pod.spec?.os?.name;
  if (os !== undefined && os !== 'linux') return { reason: 'PodOSNotSupported', message: "Failed to admit pod as the OS field doesn't match node OS" };
  const selected = pod.spec?.nodeSelector?.['kubernetes.io/os'];
  if (selected !== undefined && selected !== 'linux') {
    return { reason: 'PodOSSelectorNodeLabelDoesNotMatch', message: "Failed to admit pod as the `kubernetes.io/os` label doesn't match node label" };
  }
  const sysctl = sysctlRefusal(pod);
  if (sysctl) return { reason: 'SysctlForbidden', message: sysctl };
  return undefined;
}
