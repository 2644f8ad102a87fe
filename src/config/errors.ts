/**
 * A user-facing configuration error: the CLI prints `message` (always one line, like the kubelet's
 * flag errors) and exits with `exitCode`.
 */
export class ConfigError extends Error {
  /** pflag/cobra exit with 2 on usage errors; scripts and systemd units rely on that. */
  readonly exitCode = 2;
  override readonly name = 'ConfigError';

  constructor(message: string) {
    // One line keeps journald/systemd output readable even when a cause (e.g. YAML) spans lines.
    super(message.replace(/\s*\n\s*/g, ' ').trim());
  }
}

/** Internal: why a single value was rejected; callers wrap it with where the value came from. */
export class ValueError extends Error {}

/** Go's `%q` for the printable strings flags carry; JSON escaping is close enough for messages. */
export function quote(s: string): string {
  return JSON.stringify(s);
}
