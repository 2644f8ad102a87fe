import { BUSYBOX } from './docker.js';

/**
 * A static pod manifest of busybox containers, each running `command` (an argv), with no grace
 * period: `containers` maps container names to commands.
 */
export function podManifest(name: string, containers: Record<string, readonly string[]>, opts: { restartPolicy?: 'Always' | 'Never' | 'OnFailure' } = {}): string {
  const lines = Object.entries(containers).map(([c, command]) => `    - { name: ${c}, image: ${BUSYBOX}, imagePullPolicy: Never, command: ${JSON.stringify(command)} }`);
  return [
    'apiVersion: v1',
    'kind: Pod',
    `metadata: { name: ${name} }`,
    'spec:',
    '  terminationGracePeriodSeconds: 0',
    `  restartPolicy: ${opts.restartPolicy ?? 'Always'}`,
    '  containers:',
    ...lines,
    '',
  ].join('\n');
}
