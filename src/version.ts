import { readFileSync } from 'node:fs';

/**
 * nodelet's `/version` answer and its Node's `kubeletVersion`: the Kubernetes release whose kubelet
 * behaviours nodelet implements and is tested against (the test control plane's pin, v1.37.2:
 * test/control-plane/go.mod), with nodelet's own version in the build metadata of `gitVersion`.
 * kubectl compares the server's major/minor with its own (`kubectl version` warns beyond ±1).
 */
export const KUBERNETES_LEVEL = Object.freeze({ major: '1', minor: '37', patch: '2' });
const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string };

export const serverVersion = Object.freeze({
  major: KUBERNETES_LEVEL.major,
  minor: KUBERNETES_LEVEL.minor,
  gitVersion: `v${KUBERNETES_LEVEL.major}.${KUBERNETES_LEVEL.minor}.${KUBERNETES_LEVEL.patch}+nodelet.${pkg.version}`,
  gitCommit: '',
  gitTreeState: 'clean',
  buildDate: '',
  goVersion: '',
  compiler: 'nodelet',
  platform: `${process.platform}/${process.arch === 'x64' ? 'amd64' : process.arch}`,
});
