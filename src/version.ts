import { readFileSync } from 'node:fs';

/**
 * nodelet's `/version` answer. kubectl compares the server's major/minor with its own, so nodelet
 * reports the Kubernetes API level its objects follow (kubernetes-types 1.30) and carries its own
 * version in the build metadata of `gitVersion`.
 */
const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string };

export const serverVersion = Object.freeze({
  major: '1',
  minor: '30',
  gitVersion: `v1.30.0+nodelet.${pkg.version}`,
  gitCommit: '',
  gitTreeState: 'clean',
  buildDate: '',
  goVersion: '',
  compiler: 'nodelet',
  platform: `${process.platform}/${process.arch === 'x64' ? 'amd64' : process.arch}`,
});
