import t from 'tap';
import { controlPlaneMinor, controlPlaneModule, controlPlaneVersion } from '../../helpers/k8s-pin.js';

// NODELET_K8S picks the wrapper module as scripts/control-plane.sh does: both pins stay buildable.
t.test('NODELET_K8S picks the pin', async (t) => {
  const saved = process.env.NODELET_K8S;
  t.teardown(() => {
    if (saved === undefined) delete process.env.NODELET_K8S;
    else process.env.NODELET_K8S = saved;
  });
  delete process.env.NODELET_K8S;
  t.match(controlPlaneModule(), /\/test\/control-plane$/);
  t.equal(controlPlaneVersion(), 'v1.37.2', 'default: the pin CI runs');
  t.equal(controlPlaneMinor(), '1.37', 'and the kubectl built beside it');
  process.env.NODELET_K8S = '1.34';
  t.match(controlPlaneModule(), /\/test\/control-plane-1\.34$/);
  t.equal(controlPlaneVersion(), 'v1.34.4', 'the previous pin, on demand');
  t.equal(controlPlaneMinor(), '1.34');
  process.env.NODELET_K8S = '1.37';
  t.match(controlPlaneModule(), /\/test\/control-plane$/);
  process.env.NODELET_K8S = '1.99';
  t.throws(() => controlPlaneVersion(), /NODELET_K8S=1\.99: no wrapper module .*control-plane-1\.99\/go\.mod \(1\.37 or 1\.34\)/, 'an unknown pin is a clear error');
});
