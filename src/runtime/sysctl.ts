import type { Pod } from 'kubernetes-types/core/v1.js';

/** `kernel/shm_rmid_forced` → `kernel.shm_rmid_forced` (the kubelet swaps `/` and `.` when `/` comes first). */
export function normalizeSysctl(name: string): string {
  const first = name.search(/[./]/);
  if (first < 0 || name[first] === '.') return name;
  return name.replace(/[./]/g, (c) => (c === '/' ? '.' : '/'));
}

/** The pod's `securityContext.sysctls`, set on its sandbox, with dotted names. */
export function sandboxSysctls(pod: Pod): Record<string, string> {
  return Object.fromEntries((pod.spec?.securityContext?.sysctls ?? []).map((s) => [normalizeSysctl(s.name), s.value]));
}
