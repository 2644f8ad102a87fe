/**
 * The static pods the parts measured against bench/run.ts's nodelet need beside its bench pod
 * (`sleeper-bench`): each part that kills, execs into or forwards to a pod of its own gets one,
 * written into the manifest directory before nodelet starts. The names are the manifests' names;
 * nodelet lists them with its node name appended (`victims-bench`).
 */
import { BUSYBOX } from './env.js';

const MiB = 1024 ** 2;

/** The freshness part's containers, killed one by one (bench/lib/freshness.ts). */
export const FRESHNESS_POD = 'victims';
/** The sessions part's exec targets (bench/lib/sessions.ts). */
export const IDLE_POD = 'idlers';
/** The portforward part's busybox httpd (bench/lib/port-forward.ts). */
export const PF_POD = 'pfserver';
export const IDLE_CONTAINERS = 8;
/** The scale part's exec targets (bench/lib/scale.ts). */
export const SCALE_POD = 'scalers';
export const SCALE_CONTAINERS = 16;

const containers = (n: number, prefix: string, cmd: string) =>
  Array.from({ length: n }, (_, i) => `    - name: ${prefix}${i}\n      image: ${BUSYBOX}\n      imagePullPolicy: Never\n      command: ${cmd}\n`).join('');

export function extraManifests(parts: Set<string>, o: { freshnessSamples: number; pfBytes: number }): Record<string, string> {
  const head = (name: string, policy = 'Always') =>
    `apiVersion: v1\nkind: Pod\nmetadata: { name: ${name} }\nspec:\n  terminationGracePeriodSeconds: 0\n  restartPolicy: ${policy}\n  containers:\n`;
  const out: Record<string, string> = {};
  if (parts.has('freshness')) out[FRESHNESS_POD] = head(FRESHNESS_POD, 'Never') + containers(o.freshnessSamples, 'v', '["sleep", "2147483647"]');
  if (parts.has('sessions')) out[IDLE_POD] = head(IDLE_POD) + containers(IDLE_CONTAINERS, 'c', '["sleep", "2147483647"]');
  if (parts.has('scale')) out[SCALE_POD] = head(SCALE_POD) + containers(SCALE_CONTAINERS, 'c', '["sleep", "2147483647"]');
  if (parts.has('portforward')) {
    const count = o.pfBytes / MiB;
    out[PF_POD] = head(PF_POD) + containers(1, 'web', `["sh", "-c", "mkdir -p /www && dd if=/dev/zero of=/www/big bs=1048576 count=${count} 2>/dev/null && exec httpd -f -p 127.0.0.1:8080 -h /www"]`);
  }
  return out;
}
