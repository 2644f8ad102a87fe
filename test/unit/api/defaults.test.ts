import t from 'tap';
import { applyPodSpecDefaults, defaultPullPolicy, imageTag } from '../../../src/api/defaults.js';
import type { Pod } from '../../../src/api/types.js';

t.test('pod and container defaults', async (t) => {
  const pod: Pod = {
    metadata: { name: 'p', namespace: 'default' },
    spec: {
      initContainers: [{ name: 'init', image: 'busybox:1.36' }],
      containers: [{ name: 'app', image: 'nginx', ports: [{ containerPort: 80 }, { containerPort: 53, protocol: 'UDP' }] }],
    },
  };
  const out = applyPodSpecDefaults(pod);
  t.not(out, pod, 'new object');
  t.equal(pod.spec?.restartPolicy, undefined, 'input untouched');
  t.equal(pod.spec?.containers[0]?.imagePullPolicy, undefined, 'input containers untouched');
  t.match(out.spec, {
    restartPolicy: 'Always',
    dnsPolicy: 'ClusterFirst',
    terminationGracePeriodSeconds: 30,
    schedulerName: 'default-scheduler',
    securityContext: {},
    enableServiceLinks: true,
  });
  t.same(out.spec?.containers[0], {
    name: 'app',
    image: 'nginx',
    ports: [
      { containerPort: 80, protocol: 'TCP' },
      { containerPort: 53, protocol: 'UDP' },
    ],
    terminationMessagePath: '/dev/termination-log',
    terminationMessagePolicy: 'File',
    imagePullPolicy: 'Always',
    resources: {},
  });
  t.match(out.spec?.initContainers?.[0], { imagePullPolicy: 'IfNotPresent', terminationMessagePath: '/dev/termination-log', resources: {} });
});

t.test('explicit values are kept', async (t) => {
  const out = applyPodSpecDefaults({
    spec: {
      restartPolicy: 'Never',
      dnsPolicy: 'Default',
      terminationGracePeriodSeconds: 0,
      enableServiceLinks: false,
      containers: [{ name: 'a', image: 'x:latest', imagePullPolicy: 'Never', resources: { limits: { cpu: '1' } } }],
    },
  });
  t.match(out.spec, { restartPolicy: 'Never', dnsPolicy: 'Default', terminationGracePeriodSeconds: 0, enableServiceLinks: false });
  t.equal(out.spec?.containers[0]?.imagePullPolicy, 'Never');
  t.same(out.spec?.containers[0]?.resources, { limits: { cpu: '1' } });
});

t.test('ill-typed specs are left for validation', async (t) => {
  t.same(applyPodSpecDefaults({ metadata: { name: 'x' } }), { metadata: { name: 'x' } });
  const weird = { spec: 'nope' } as unknown as Pod;
  t.same(applyPodSpecDefaults(weird), weird);
  const junk = { spec: { containers: ['x', null] } } as unknown as Pod;
  t.same(applyPodSpecDefaults(junk).spec?.containers, ['x', null]);
});

t.test('imagePullPolicy from the tag', async (t) => {
  const table: Array<[string, string]> = [
    ['nginx', 'Always'],
    ['nginx:latest', 'Always'],
    ['library/nginx:latest', 'Always'],
    ['localhost:5000/app', 'Always'],
    ['localhost:5000/app:latest', 'Always'],
    ['nginx:1.25', 'IfNotPresent'],
    ['localhost:5000/app:v1', 'IfNotPresent'],
    ['nginx@sha256:' + 'a'.repeat(64), 'IfNotPresent'],
    ['nginx:latest@sha256:' + 'a'.repeat(64), 'Always'],
    ['nginx:1.25@sha256:' + 'a'.repeat(64), 'IfNotPresent'],
    ['', 'IfNotPresent'],
  ];
  for (const [image, want] of table) t.equal(defaultPullPolicy(image), want, image);
  t.equal(imageTag('a/b:c'), 'c');
  t.equal(imageTag('a:1/b'), undefined);
  t.equal(imageTag('a@sha256:00'), '');
});

t.test('hostNetwork: an unset hostPort is its containerPort (defaultHostNetworkPorts), for init containers too', async (t) => {
  const pod: Pod = {
    metadata: { name: 'p', namespace: 'default' },
    spec: {
      hostNetwork: true,
      initContainers: [{ name: 'init', image: 'busybox:1.36', ports: [{ containerPort: 9000 }] }],
      containers: [{ name: 'app', image: 'nginx', ports: [{ containerPort: 80 }, { containerPort: 53, hostPort: 53, protocol: 'UDP' }, { containerPort: 81, hostPort: 0 }] }],
    },
  };
  const out = applyPodSpecDefaults(pod);
  t.same(out.spec?.containers[0]?.ports?.map((p) => p.hostPort), [80, 53, 81]);
  t.same(out.spec?.initContainers?.[0]?.ports?.map((p) => p.hostPort), [9000]);
  const off = applyPodSpecDefaults({ ...pod, spec: { ...pod.spec!, hostNetwork: false } });
  t.same(off.spec?.containers[0]?.ports?.map((p) => p.hostPort), [undefined, 53, 0], 'not on the pod network');
});
