import t from 'tap';
import { compare, interleavedPairs } from '../../../bench/lib/vs-kubelet.js';
import { containerdConfig, kubeletConfiguration, type BridgeNet } from '../../../bench/lib/kubelet-peer.js';

t.test('a comparison line: nodelet beside the kubelet, the ratio paired per round', async (t) => {
  // Round 1: 100 vs 50 (2×), round 2: 300 vs 300 (1×), round 3: 200 vs 400 (0.5×). The median of
  // the paired ratios is 1; the ratio of the medians (200 / 300) would be 0.667.
  const m = compare('vs_kubelet_x', 'ms', 'lower', [100, 300, 200], [50, 300, 400], { pods: 30 }, 0);
  t.equal(m.variant, 'nodelet');
  t.equal(m.baseline_variant, 'kubelet');
  t.equal(m.better, 'lower');
  t.equal(m.value, 200, 'nodelet: the median over rounds');
  t.equal(m.baseline, 300, 'kubelet: the median over rounds');
  t.equal(m.ratio, 1, 'the median of the per-round ratios');
  t.same([m.min, m.max, m.baseline_min, m.baseline_max], [100, 300, 50, 400]);
  t.same([m.ratio_min, m.ratio_max], [0.5, 2]);
  t.equal(m.rounds, 3);
  t.equal(m.pods, 30, 'extra fields kept');
});

t.test('a kubelet figure of 0 gives no ratio (null in JSON), not Infinity', async (t) => {
  const m = compare('vs_kubelet_y', 'MiB', 'lower', [5], [0]);
  t.equal(m.ratio, null);
  t.equal(m.value, 5);
});

t.test("the 'echo x' samples: pairs whose order alternates, each node sampled count times", async (t) => {
  t.same(interleavedPairs(['nodelet', 'kubelet'], 3), ['nodelet', 'kubelet', 'kubelet', 'nodelet', 'nodelet', 'kubelet']);
  t.same(interleavedPairs(['kubelet', 'nodelet'], 1), ['kubelet', 'nodelet'], 'one pair: the round order, as before the option');
  t.same(interleavedPairs(['nodelet', 'kubelet'], 0), []);
  const order = ['nodelet', 'kubelet'] as const;
  interleavedPairs(order, 2);
  t.same(order, ['nodelet', 'kubelet'], 'the round order is not reversed in place');
});

const net: BridgeNet = { name: 'kubeletnet', confDir: '/tmp/nlk-ctd.x/net.d', dataDir: '/tmp/nlk-ctd.x/leases', cacheDir: '/tmp/nlk-ctd.x/cni-cache', subnet: '10.244.2.0/24', bridge: 'cni2' };

t.test("containerd's config keeps everything below its directory and fits this machine", async (t) => {
  const toml = containerdConfig({ dir: '/tmp/nlk-ctd.x', address: '/tmp/nlk-ctd.x/c.sock', sandboxImage: 'registry.k8s.io/pause:3.10', net });
  t.match(toml, /^version = 2$/m);
  t.match(toml, /^root = "\/tmp\/nlk-ctd\.x\/root"$/m);
  t.match(toml, /^state = "\/tmp\/nlk-ctd\.x\/state"$/m);
  t.match(toml, /^\[grpc\]\n {2}address = "\/tmp\/nlk-ctd\.x\/c\.sock"$/m);
  t.match(toml, /sandbox_image = "registry\.k8s\.io\/pause:3\.10"/);
  t.match(toml, /conf_dir = "\/tmp\/nlk-ctd\.x\/net\.d"/);
  t.match(toml, /bin_dir = "\/usr\/lib\/cni"/);
  t.match(toml, /restrict_oom_score_adj = true/, 'no CAP_SYS_RESOURCE: sandbox scores clamped');
  t.match(toml, /netns_mounts_under_state_dir = true/, "pod netns not in the machine's /var/run/netns");
  t.match(toml, /SystemdCgroup = false/);
  // Every absolute path in it is below the directory or a system path it only reads.
  for (const [, path] of toml.matchAll(/"(\/[^"]*)"/g)) t.ok(path!.startsWith('/tmp/nlk-ctd.x/') || path === '/usr/lib/cni', path!);
});

t.test("the kubelet's configuration: the node's address, the CRI socket, cgroupfs, cgroup v1 allowed", async (t) => {
  const c = kubeletConfiguration({ nodeIP: '10.200.0.2', port: 4000, healthzPort: 4001, caFile: '/cp/ca.crt', cgroupRoot: '/nodelet-bench-kubelet-1', runtimeAddress: '/tmp/nlk-ctd.x/c.sock', podLogsDir: '/tmp/nlk-kubelet.x/pod-logs', maxPods: 250, containerLogMaxSize: '2Gi' });
  t.equal(c.kind, 'KubeletConfiguration');
  t.equal(c.apiVersion, 'kubelet.config.k8s.io/v1beta1');
  t.equal(c.address, '10.200.0.2');
  t.equal(c.port, 4000);
  t.equal(c.readOnlyPort, 0);
  t.equal(c.containerRuntimeEndpoint, 'unix:///tmp/nlk-ctd.x/c.sock');
  t.equal(c.cgroupDriver, 'cgroupfs');
  t.equal(c.cgroupRoot, '/nodelet-bench-kubelet-1');
  t.equal(c.failCgroupV1, false);
  t.equal(c.failSwapOn, false);
  t.equal(c.podLogsDir, '/tmp/nlk-kubelet.x/pod-logs');
  t.equal(c.containerLogMaxSize, '2Gi', "the same log rotation size as nodelet's --container-log-max-size");
  t.same(c.authentication, { anonymous: { enabled: false }, webhook: { enabled: true }, x509: { clientCAFile: '/cp/ca.crt' } });
  t.same(c.authorization, { mode: 'Webhook' });
});
