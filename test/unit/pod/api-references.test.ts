import t from 'tap';
import type { Pod } from '../../../src/api/types.js';
import { apiObjectReference } from '../../../src/pod/api-references.js';

const pod = (spec: Record<string, unknown>): Pod => ({ metadata: { name: 'p' }, spec: { containers: [{ name: 'c', image: 'busybox' }], ...spec } as Pod['spec'] });
const withContainer = (c: Record<string, unknown>, kind = 'containers') => pod({ [kind]: [{ name: 'c', image: 'busybox', ...c }] });

t.test('what HasAPIObjectReference names, as the kubelet words it', async (t) => {
  const cases: [string, Pod, string | undefined][] = [
    ['standalone pod', pod({ volumes: [{ name: 'e', emptyDir: {} }, { name: 'h', hostPath: { path: '/x' } }, { name: 'd', downwardAPI: { items: [] } }] }), undefined],
    ['projected downward API only', pod({ volumes: [{ name: 'p', projected: { sources: [{ downwardAPI: { items: [] } }] } }] }), undefined],
    ['service account', pod({ serviceAccountName: 'robot' }), 'serviceaccounts'],
    ['empty service account name', pod({ serviceAccountName: '' }), undefined],
    ['image pull secret', pod({ imagePullSecrets: [{ name: 'reg' }] }), 'secrets'],
    ['image pull secret with no name', pod({ imagePullSecrets: [{ name: '' }] }), undefined],
    ['secret env', withContainer({ env: [{ name: 'X', valueFrom: { secretKeyRef: { name: 's', key: 'k' } } }] }), 'secrets'],
    ['secret envFrom in an init container', withContainer({ envFrom: [{ secretRef: { name: 's' } }] }, 'initContainers'), 'secrets'],
    ['configMap env in an ephemeral container', withContainer({ env: [{ name: 'X', valueFrom: { configMapKeyRef: { name: 'm', key: 'k' } } }] }, 'ephemeralContainers'), 'configmaps'],
    ['configMap envFrom', withContainer({ envFrom: [{ configMapRef: { name: 'm' } }] }), 'configmaps'],
    ['secret volume', pod({ volumes: [{ name: 'v', secret: { secretName: 's' } }] }), 'secrets'],
    ['secret volume with no name', pod({ volumes: [{ name: 'v', secret: {} }] }), 'secrets (via secret volumes)'],
    ['configMap volume', pod({ volumes: [{ name: 'v', configMap: { name: 'm' } }] }), 'configmaps'],
    ['CSI volume', pod({ volumes: [{ name: 'v', csi: { driver: 'x' } }] }), 'csidrivers (via CSI volumes)'],
    ['CSI volume with a secret', pod({ volumes: [{ name: 'v', csi: { driver: 'x', nodePublishSecretRef: { name: 's' } } }] }), 'secrets'],
    ['PVC', pod({ volumes: [{ name: 'v', persistentVolumeClaim: { claimName: 'c' } }] }), 'persistentvolumeclaims'],
    ['ephemeral volume', pod({ volumes: [{ name: 'v', ephemeral: {} }] }), 'persistentvolumeclaims (via ephemeral volumes)'],
    ['glusterfs', pod({ volumes: [{ name: 'v', glusterfs: { endpoints: 'e', path: 'p' } }] }), 'endpoints (via glusterFS volumes)'],
    ['rbd secret', pod({ volumes: [{ name: 'v', rbd: { monitors: [], image: 'i', secretRef: { name: 's' } } }] }), 'secrets'],
    ['token', pod({ volumes: [{ name: 'v', projected: { sources: [{ downwardAPI: { items: [] } }, { serviceAccountToken: { path: 't' } }] } }] }), 'serviceaccounts (via projected volumes)'],
    ['projected configMap with no name', pod({ volumes: [{ name: 'v', projected: { sources: [{ configMap: {} }] } }] }), 'configmaps (via projected volumes)'],
    ['cluster trust bundle', pod({ volumes: [{ name: 'v', projected: { sources: [{ clusterTrustBundle: { name: 'b', path: 'p' } }] } }] }), 'clustertrustbundles'],
    ['resource claims', pod({ resourceClaims: [{ name: 'gpu' }] }), 'resourceclaims'],
    ['mistyped volumes', pod({ volumes: 'nope' }), undefined],
  ];
  for (const [name, p, want] of cases) t.equal(apiObjectReference(p), want, name);
});
