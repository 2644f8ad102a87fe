/**
 * A container cannot be configured: a volume cannot be set up, an env source is missing, or a
 * security setting is refused. The kubelet reports it as the waiting reason
 * `CreateContainerConfigError` and retries with back-off. Messages never carry secret data.
 */
export class ContainerConfigError extends Error {
  readonly reason = 'CreateContainerConfigError';
  /** `FailedMount` when a volume is at fault (a pod-level Warning event is recorded too). */
  readonly event: 'FailedMount' | undefined;

  constructor(message: string, opts: { mount?: boolean } = {}) {
    super(message);
    this.name = 'ContainerConfigError';
    this.event = opts.mount ? 'FailedMount' : undefined;
  }
}

/** What a reference to an API object says when nodelet runs without an apiserver. */
export const needsClusterMode = (what: string) => `${what} needs cluster mode (--kubeconfig)`;
