import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import type { Pod } from '../../src/api/types.js';
import { BUSYBOX, dockerCLI } from './docker.js';
import type { TestNode } from './nodelet.js';

/**
 * One node's CNI set-up for the tests that give pods IPs (each inside its sealed test netns,
 * test/helpers/netns.ts): a bridge network of real Debian plugins (bridge + host-local + portmap)
 * and what the tests read back of it — host-local's leases, libcni's cache, veths, NAT rules.
 */

export interface Net {
  readonly confDir: string;
  readonly cacheDir: string;
  /** host-local's dataDir: one file per leased IP below `<dataDir>/<network>`. */
  readonly dataDir: string;
  readonly binDir: string;
  readonly subnet: string;
}

interface Teardown {
  teardown(fn: () => void): void;
}

/**
 * A conf dir, cache dir and lease dir of node `n` (bridge `cni<n>`, subnet 10.244.n.0/24);
 * `write` puts the network in place, with one chained plugin of `binDir` after portmap if named.
 */
export function nodeNet(t: Teardown, n: number, write = true): Net & { write(extraPlugin?: string): void } {
  const root = mkdtempSync(join(tmpdir(), `nodelet-pod-net-${n}-`));
  t.teardown(() => rmSync(root, { recursive: true, force: true }));
  const net = { confDir: join(root, 'net.d'), cacheDir: join(root, 'cache'), dataDir: join(root, 'leases'), binDir: join(root, 'bin'), subnet: `10.244.${n}.0/24` };
  mkdirSync(net.confDir);
  mkdirSync(net.binDir);
  const writeConf = (extraPlugin?: string) =>
    writeFileSync(
      join(net.confDir, '10-test.conflist'),
      JSON.stringify({
        cniVersion: '1.0.0',
        name: 'testnet',
        plugins: [
          {
            type: 'bridge',
            bridge: `cni${n}`,
            isGateway: true,
            hairpinMode: true,
            ipam: { type: 'host-local', dataDir: net.dataDir, ranges: [[{ subnet: net.subnet }]], routes: [{ dst: '0.0.0.0/0' }] },
          },
          { type: 'portmap', capabilities: { portMappings: true } },
          ...(extraPlugin ? [{ type: extraPlugin }] : []),
        ],
      }),
    );
  if (write) writeConf();
  return { ...net, write: writeConf };
}

/** The IPs host-local has leased on the network (file names of `<dataDir>/testnet`). */
export const leases = (net: Net): string[] => {
  const dir = join(net.dataDir, 'testnet');
  return existsSync(dir) ? readdirSync(dir).filter((f) => /^\d+\.\d+\.\d+\.\d+$/.test(f)) : [];
};

/** The sandbox ID a lease names (host-local writes `<containerID>\r\n<ifname>`), or undefined. */
export const leaseHolder = (net: Net, ip: string): string | undefined => {
  try {
    return readFileSync(join(net.dataDir, 'testnet', ip), 'utf8').split(/\r?\n/)[0];
  } catch {
    return undefined;
  }
};

/** libcni cache files of the network's attachments. */
export const cached = (net: Net): string[] => {
  const dir = join(net.cacheDir, 'results');
  return existsSync(dir) ? readdirSync(dir).filter((f) => f.startsWith('testnet-')) : [];
};

/**
 * Every path below `dir` (relative, sorted), a lease file (an IP) with its content: what "the
 * IPAM directory as it was" compares. host-local's `lock` and `last_reserved_ip.0` are listed by
 * name only (the latter moves on with every ADD, by design).
 */
export function listing(dir: string): string[] {
  if (!existsSync(dir)) return [];
  const out: string[] = [];
  const walk = (d: string) => {
    for (const name of readdirSync(d).sort()) {
      const path = join(d, name);
      const rel = relative(dir, path);
      if (statSync(path).isDirectory()) {
        out.push(`${rel}/`);
        walk(path);
      } else out.push(/^\d+\.\d+\.\d+\.\d+$/.test(name) ? `${rel}: ${JSON.stringify(readFileSync(path, 'utf8'))}` : rel);
    }
  };
  walk(dir);
  return out;
}

/** veths in this process's netns (the test netns: one host end per attached sandbox). */
export const veths = (): number => execFileSync('ip', ['-o', 'link', 'show', 'type', 'veth'], { encoding: 'utf8' }).split('\n').filter(Boolean).length;

/** The nat table's chains and rules (portmap's `CNI-HOSTPORT-*` and per-sandbox `CNI-DN-*`), counters dropped. */
export const natRules = (): string[] =>
  execFileSync('iptables-save', ['-t', 'nat'], { encoding: 'utf8' })
    .split('\n')
    .filter((l) => l.startsWith('-A ') || l.startsWith(':'))
    .map((l) => l.replace(/ \[\d+:\d+\]$/, ''))
    .sort();

/**
 * A chained CNI plugin that records each call (`<CNI_COMMAND> <CNI_CONTAINERID>` lines in
 * `<binDir>/calls`) and passes `prevResult` on: with it in the list, a test counts the ADDs a
 * sandbox had. `calls(id)` are the commands recorded for one sandbox.
 */
export function recordingPlugin(net: Net, type = 'nodelet-test-record'): { type: string; calls(sandboxId?: string): string[] } {
  const log = join(net.binDir, 'calls');
  writeFileSync(
    join(net.binDir, type),
    `#!${process.execPath}
const fs = require('node:fs');
const input = fs.readFileSync(0, 'utf8');
const cmd = process.env.CNI_COMMAND;
if (cmd === 'VERSION') { process.stdout.write(JSON.stringify({ cniVersion: '1.0.0', supportedVersions: ['0.4.0', '1.0.0'] })); process.exit(0); }
fs.appendFileSync(${JSON.stringify(log)}, cmd + ' ' + process.env.CNI_CONTAINERID + '\\n');
if (cmd === 'ADD') process.stdout.write(JSON.stringify(JSON.parse(input).prevResult));
`,
    { mode: 0o755 },
  );
  return {
    type,
    calls: (sandboxId) =>
      (existsSync(log) ? readFileSync(log, 'utf8') : '')
        .split('\n')
        .filter(Boolean)
        .filter((l) => sandboxId === undefined || l.endsWith(` ${sandboxId}`))
        .map((l) => l.split(' ')[0] ?? ''),
  };
}

/**
 * A static pod serving busybox httpd on 8080 (optionally on `hostPort` too) that first writes
 * `status.podIP` and `status.podIPs`, as the downward API gave them, to /www/env.
 */
export const webPod = (name: string, hostPort?: number) => `apiVersion: v1
kind: Pod
metadata: { name: ${name} }
spec:
  terminationGracePeriodSeconds: 1
  containers:
    - name: main
      image: ${BUSYBOX}
      imagePullPolicy: Never
      command: ["sh", "-c", "echo \\"$POD_IP $POD_IPS\\" > /www/env; exec httpd -f -p 8080 -h /www"]
      ports: [{ containerPort: 8080${hostPort ? `, hostPort: ${hostPort}` : ''} }]
      env:
        - { name: POD_IP, valueFrom: { fieldRef: { fieldPath: status.podIP } } }
        - { name: POD_IPS, valueFrom: { fieldRef: { fieldPath: status.podIPs } } }
`;

/** The pod when it is Running with every container running, else undefined (for waitFor). */
export const running = (pod: Pod | undefined) => (pod?.status?.phase === 'Running' && pod.status.containerStatuses?.every((c) => c.state?.running) ? pod : undefined);

/** The Docker ID of the pod's first container ('' before it has one). */
export const idOf = (pod: Pod | undefined) => pod?.status?.containerStatuses?.[0]?.containerID?.replace('docker://', '') ?? '';

/** Full IDs of the static pod `name`'s sandboxes on `node` (stopped ones too unless `all` is false). */
export const sandboxesOf = async (node: TestNode, name: string, all = true) =>
  (await dockerCLI('ps', ...(all ? ['-a'] : []), '-q', '--no-trunc', '--filter', `label=io.kubernetes.pod.name=${name}-${node.nodeName}`, '--filter', 'label=io.kubernetes.docker.type=podsandbox')).split('\n').filter(Boolean);
