import { readFileSync } from 'node:fs';
import t from 'tap';
import { serverVersion } from '../../../src/version.js';

/** The Kubernetes level nodelet reports is the one its default test pin (test/control-plane) runs. */
t.test('gitVersion is v<pin>+nodelet.<package version>, major/minor the pin\'s', async (t) => {
  const goMod = readFileSync(new URL('../../control-plane/go.mod', import.meta.url), 'utf8');
  const pin = /^\s*k8s\.io\/kubernetes (v(\d+)\.(\d+)\.\d+)\s*$/m.exec(goMod);
  t.ok(pin, 'test/control-plane/go.mod requires k8s.io/kubernetes');
  const pkg = JSON.parse(readFileSync(new URL('../../../package.json', import.meta.url), 'utf8')) as { version: string };
  t.equal(serverVersion.gitVersion, `${pin?.[1]}+nodelet.${pkg.version}`);
  t.equal(serverVersion.major, pin?.[2]);
  t.equal(serverVersion.minor, pin?.[3]);
});
