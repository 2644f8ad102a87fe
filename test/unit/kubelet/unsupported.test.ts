import t from 'tap';
import type { Pod } from '../../../src/api/types.js';
import { validatePod } from '../../../src/api/validation.js';
import { unsupportedFieldRefusal } from '../../../src/kubelet/unsupported.js';
import { waitFor } from '../../helpers/wait.js';
import { startKubelet } from './fixtures/kubelet.js';

type Spec = NonNullable<Pod['spec']>;
const pod = (extra: Partial<Spec> = {}, container: Partial<Spec['containers'][number]> = {}): Pod => ({
  metadata: { uid: 'u1', name: 'p', namespace: 'default' },
  spec: { restartPolicy: 'Always', containers: [{ name: 'app', image: 'busybox', ...container }], ...extra },
});

t.test('runtimeClassName: refused whatever the class, naming it', async (t) => {
  const r = unsupportedFieldRefusal(pod({ runtimeClassName: 'gvisor' }));
  t.equal(r?.reason, 'FailedCreatePodSandBox');
  t.match(r?.message, /^runtimeClassName "gvisor": nodelet has a single container runtime \(Docker\) and no RuntimeClass handlers/);
  t.match(unsupportedFieldRefusal(pod({ runtimeClassName: 'runc', overhead: { cpu: '100m' } }))?.message, /^runtimeClassName "runc"/, 'the class is named before its overhead');
});

t.test('overhead: only set together with a RuntimeClass', async (t) => {
  const r = unsupportedFieldRefusal(pod({ overhead: { memory: '64Mi' } }));
  t.equal(r?.reason, 'FailedCreatePodSandBox');
  t.match(r?.message, /^overhead: pod overhead is only set together with a RuntimeClass \(runtimeClassName\)/);
  t.equal(unsupportedFieldRefusal(pod({ overhead: {} })), undefined, 'an empty overhead asks for nothing');
});

t.test('resourceClaims: no dynamic resource allocation', async (t) => {
  const r = unsupportedFieldRefusal(pod({ resourceClaims: [{ name: 'gpu' }] }));
  t.equal(r?.reason, 'FailedPrepareDynamicResources');
  t.equal(r?.message, 'resourceClaim "gpu": dynamic resource allocation (resourceClaims) is not supported by nodelet');
  t.match(unsupportedFieldRefusal(pod({}, { resources: { claims: [{ name: 'fpga' }] } }))?.message, /^resourceClaim "fpga"/, "a container's resources.claims too");
});

t.test('hostPort: refused without hostNetwork, applied with it', async (t) => {
  const r = unsupportedFieldRefusal(pod({}, { ports: [{ containerPort: 80 }, { containerPort: 8080, hostPort: 30080, hostIP: '127.0.0.1', protocol: 'TCP' }] }));
  t.equal(r?.reason, 'FailedCreatePodSandBox');
  t.match(r?.message, /^container "app": hostPort 127\.0\.0\.1:30080 \(containerPort 8080\/TCP\) cannot be published: the pod network maps no host ports .*portMappings capability/);
  t.match(r?.message, /use hostNetwork: true/);
  const init = pod({ initContainers: [{ name: 'setup', image: 'busybox', ports: [{ containerPort: 53, hostPort: 53, protocol: 'UDP' }] }] });
  t.match(unsupportedFieldRefusal(init)?.message, /^container "setup": hostPort 53 \(containerPort 53\/UDP\)/, 'init containers too');
  t.equal(unsupportedFieldRefusal(pod({}, { ports: [{ containerPort: 80, hostPort: 0 }] })), undefined, 'hostPort 0 is no host port');
  t.equal(unsupportedFieldRefusal(pod({ hostNetwork: true }, { ports: [{ containerPort: 8080, hostPort: 8080 }] })), undefined, 'hostNetwork: the container listens on the host port itself');
  t.equal(unsupportedFieldRefusal(pod()), undefined);
});

t.test('hostPort on a network with the portMappings capability (--network-plugin=cni with portmap): published for regular containers, refused for init containers', async (t) => {
  const published = { hostPorts: true };
  t.equal(unsupportedFieldRefusal(pod({}, { ports: [{ containerPort: 8080, hostPort: 30080, protocol: 'TCP' }] }), published), undefined);
  const init = pod({ initContainers: [{ name: 'setup', image: 'busybox', ports: [{ containerPort: 53, hostPort: 53, protocol: 'UDP' }] }] });
  const r = unsupportedFieldRefusal(init, published);
  t.equal(r?.reason, 'FailedCreatePodSandBox');
  t.match(r?.message, /^container "setup": hostPort 53 \(containerPort 53\/UDP\) cannot be published: the kubelet publishes the host ports of regular containers only/);
  t.match(unsupportedFieldRefusal(pod({}, { ports: [{ containerPort: 8080, hostPort: 30080 }] }), { hostPorts: false })?.message, /maps no host ports/, 'a network without the capability still refuses');
});

t.test('validation (static pods): with hostNetwork, hostPort must be the containerPort, as the apiserver says', async (t) => {
  const withPorts = (hostNetwork: boolean, ports: unknown[]) => validatePod({ ...pod({ hostNetwork }), spec: { ...pod({ hostNetwork }).spec!, containers: [{ name: 'app', image: 'busybox', ports: ports as never }] } });
  t.same(withPorts(true, [{ containerPort: 8080, hostPort: 8080 }, { containerPort: 9090 }]), [], 'equal, or unset (the apiserver defaults it to the containerPort)');
  t.same(withPorts(true, [{ containerPort: 8080, hostPort: 80 }]), ['spec.containers[0].ports[0].containerPort: Invalid value: 8080: must match `hostPort` when `hostNetwork` is true']);
  t.same(withPorts(false, [{ containerPort: 8080, hostPort: 80 }]), [], 'without hostNetwork validation allows it (nodelet refuses it at the sandbox)');
});

t.test('through the sync: a refused pod gets no sandbox; its container waits with CreateContainerConfigError and the reason, and an event says it', async (t) => {
  const { runtime, podManager, statusManager, recorder, kubelet } = startKubelet();
  t.teardown(() => kubelet.stop());
  const refused = pod({ runtimeClassName: 'kata' });
  podManager.updatePod(refused);
  kubelet.handlePodChanges({ added: [refused], updated: [], removed: [] });
  await waitFor('the refusal event', () => (recorder.list('default').some((e) => e.reason === 'FailedCreatePodSandBox') ? true : undefined), 5000, 5);
  // Published at once: no runtime event follows a refusal, and the retry is 10 s away.
  const waitingNow = () => statusManager.getPodStatus('u1')?.containerStatuses?.[0]?.state?.waiting;
  const waiting = await waitFor('waiting with the refusal', () => (waitingNow()?.reason === 'CreateContainerConfigError' ? waitingNow() : undefined), 5000, 5);
  t.match(waiting.message, /^runtimeClassName "kata": nodelet has a single container runtime/);
  t.equal(statusManager.getPodStatus('u1')?.phase, 'Pending');
  t.same(runtime.calls, [], 'no sandbox, no container');
  const event = recorder.list('default').find((e) => e.reason === 'FailedCreatePodSandBox');
  t.equal(event?.type, 'Warning');
  t.match(event?.message, /runtimeClassName "kata"/);
});

t.test('restartPolicyRules: applied on init, sidecar and regular containers with their own restartPolicy; the rest refused with the reason', async (t) => {
  const rules = (extra: object = {}) => [{ action: 'Restart', exitCodes: { operator: 'In', values: [42] }, ...extra }];
  t.equal(unsupportedFieldRefusal(pod({}, { restartPolicy: 'Never', restartPolicyRules: rules() })), undefined, 'applied');
  t.equal(unsupportedFieldRefusal(pod({}, { restartPolicy: 'OnFailure' })), undefined, 'a container-level policy alone is applied too');
  t.match(unsupportedFieldRefusal(pod({}, { restartPolicyRules: rules() }))?.message, /container "app": restartPolicyRules need the container's own restartPolicy/);
  t.equal(unsupportedFieldRefusal(pod({}, { restartPolicy: 'Never', restartPolicyRules: rules({ action: 'RestartAllContainers' }) })), undefined, 'RestartAllContainers is applied');
  t.match(unsupportedFieldRefusal(pod({}, { restartPolicy: 'Never', restartPolicyRules: rules({ action: 'RestartPod' }) }))?.message, /action "RestartPod" is not supported \(only "Restart" and "RestartAllContainers"\)/);
  t.match(unsupportedFieldRefusal(pod({}, { restartPolicy: 'Never', restartPolicyRules: [{ action: 'Restart', exitCodes: { operator: 'Gt', values: [1] } }] }))?.message, /operator "In" or "NotIn"/);
  t.match(unsupportedFieldRefusal(pod({}, { restartPolicy: 'Never', restartPolicyRules: [{ action: 'Restart', exitCodes: { operator: 'In', values: Array.from({ length: 256 }, (_, i) => i) } }] }))?.message, /at most 255 values/);
  t.match(unsupportedFieldRefusal(pod({ initContainers: [{ name: 'init', image: 'busybox', restartPolicyRules: rules() }] }))?.message, /container "init": restartPolicyRules need the container's own restartPolicy/);
  const restartAll = rules({ action: 'RestartAllContainers' });
  t.equal(unsupportedFieldRefusal(pod({ initContainers: [{ name: 'init', image: 'busybox', restartPolicy: 'Never', restartPolicyRules: restartAll }] })), undefined, 'on an init container');
  t.equal(unsupportedFieldRefusal(pod({ initContainers: [{ name: 'sidecar', image: 'busybox', restartPolicy: 'Always', restartPolicyRules: restartAll }] })), undefined, 'on a sidecar');
  t.same(validatePod({ ...pod({ initContainers: [{ name: 'init', image: 'busybox', restartPolicy: 'Never', restartPolicyRules: restartAll }] }), apiVersion: 'v1', kind: 'Pod' }), [], 'an init container may have restartPolicy Never');
  t.match(JSON.stringify(validatePod({ ...pod({}, { restartPolicy: 'Sometimes' }), apiVersion: 'v1', kind: 'Pod' })), /restartPolicy/, 'an unknown container restartPolicy fails validation');
});
