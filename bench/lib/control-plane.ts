/**
 * The bench's handle on a control plane of its own. The control plane itself is the tests' and
 * the soak suite's (test/helpers/control-plane.ts, the one harness over scripts/control-plane.sh:
 * build when not cached, start etcd, kube-apiserver, controller-manager and scheduler on 127.0.0.1
 * in a temp directory, node kubeconfigs, stop); this class only gives the bench's parts their
 * shape of it: `start(root, log, defer)` with the bench's cleanup list as the teardown, and `env`,
 * the values of the script's DIR/env by their names there.
 */
import { startControlPlane, type ControlPlane } from '../../test/helpers/control-plane.js';

export interface BenchControlPlaneEnv {
  readonly APISERVER_URL: string;
  readonly CA_FILE: string;
  readonly ADMIN_KUBECONFIG: string;
  readonly KUBELET_CLIENT_CERT: string;
  readonly KUBELET_CLIENT_KEY: string;
  readonly K8S_VERSION: string;
}

export class BenchControlPlane {
  readonly env: BenchControlPlaneEnv;

  private constructor(readonly harness: ControlPlane) {
    this.env = {
      APISERVER_URL: harness.server,
      CA_FILE: harness.caFile,
      ADMIN_KUBECONFIG: harness.adminKubeconfig,
      KUBELET_CLIENT_CERT: harness.kubeletClientCert,
      KUBELET_CLIENT_KEY: harness.kubeletClientKey,
      K8S_VERSION: harness.k8sVersion,
    };
  }

  get server(): string {
    return this.harness.server;
  }

  get dir(): string {
    return this.harness.dir;
  }

  /**
   * Builds (cached) and starts a fresh control plane; resolves once pods can be created. `defer`
   * gets its stop once it runs (a start that fails stops what it started itself). `_root` is kept
   * for the callers: the harness finds scripts/control-plane.sh from its own path.
   */
  static async start(_root: string, log: (msg: string) => void, defer: (stop: () => Promise<void>) => void): Promise<BenchControlPlane> {
    const harness = await startControlPlane({ teardown: (stop) => defer(async () => { await stop(); }) }, { log });
    return new BenchControlPlane(harness);
  }

  /** A kubeconfig for `system:node:<name>` (group system:nodes); returns its path. */
  nodeKubeconfig(name: string): Promise<string> {
    return this.harness.nodeKubeconfig(name);
  }

  /** Stops every process and removes the directory; safe to call twice. */
  stop(): Promise<void> {
    return this.harness.stop();
  }
}
