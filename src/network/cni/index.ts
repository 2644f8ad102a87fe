/** The `cni` network plugin: nodelet executes CNI plugins itself (see plugin.ts). */
export { CNINetworkPlugin, type CNINetworkPluginOptions, DEFAULT_TIMEOUT_MS, DEFAULT_RELOAD_MS } from './plugin.js';

/** cri-dockerd's and the kubelet's `--cni-conf-dir` default. */
export const DEFAULT_CNI_CONF_DIR = '/etc/cni/net.d';
/** `--cni-bin-dir`: upstream's install dir, then Debian's (`containernetworking-plugins`). */
export const DEFAULT_CNI_BIN_DIRS: readonly string[] = ['/opt/cni/bin', '/usr/lib/cni'];
/** `--cni-cache-dir` (libcni's default). */
export const DEFAULT_CNI_CACHE_DIR = '/var/lib/cni/cache';
