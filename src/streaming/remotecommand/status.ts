import type { Status } from '../../api/types.js';
import type { CommandResult, RemoteCommandVersion } from '../types.js';

/** How a session ended from the error channel's point of view: a runtime result, or a failure to run. */
export type SessionOutcome = CommandResult | { readonly kind: 'error'; readonly error: unknown };

export type SessionKind = 'exec' | 'attach';

const errorText = (err: unknown): string => (err instanceof Error ? err.message : String(err));

/** The prefix `ServeExec`/`ServeAttach` put on runtime errors before `NewInternalError`. */
const internalPrefix = (kind: SessionKind): string =>
  kind === 'exec' ? 'error executing command in container: ' : 'error attaching to container: ';

/**
 * The `metav1.Status` the kubelet writes on the error channel, with keys in Go's struct order
 * (kind/apiVersion omitted, `metadata`, `status`, `message`, `reason`, `details`, `code`) so
 * `JSON.stringify` yields the kubelet's bytes (1.29 `v4WriteStatusFunc`,
 * pkg/kubelet/cri/streaming/remotecommand/httpstream.go).
 *
 * - exec exit 0, attach that ended (exited or detached): `Success`. The kubelet's attach never
 *   reports exit codes (`ServeAttach` writes Success whenever the runtime returns no error).
 * - exec exit 1..255: `NonZeroExitCode` with an `ExitCode` cause (client-go parses it as uint8).
 * - exec exit outside 0..255 (or non-integer): never an ExitCode cause — kubectl rejects such values
 *   ("invalid exit code value"), so it becomes an InternalError naming the code instead.
 * - a thrown/rejected runtime error: `InternalError` with the exec/attach prefix.
 */
export function remoteCommandStatus(kind: SessionKind, command: readonly string[], outcome: SessionOutcome): Status {
  if (outcome.kind === 'detached' || (outcome.kind === 'exited' && (kind === 'attach' || outcome.exitCode === 0))) {
    return { metadata: {}, status: 'Success' };
  }
  if (outcome.kind === 'exited') {
    const code = outcome.exitCode;
    if (Number.isInteger(code) && code >= 1 && code <= 255) {
      return {
        metadata: {},
        status: 'Failure',
        message: `command terminated with non-zero exit code: error executing command [${command.join(' ')}], exit code ${code}`,
        reason: 'NonZeroExitCode',
        details: { causes: [{ reason: 'ExitCode', message: String(code) }] },
      };
    }
    return internal(kind, `command [${command.join(' ')}] ended with an exit code outside 0-255: ${String(code)}`);
  }
  return internal(kind, errorText(outcome.error));
}

function internal(kind: SessionKind, err: string): Status {
  const text = internalPrefix(kind) + err;
  // apierrors.NewInternalError: message prefixed, the bare error as the only cause, code 500.
  return {
    metadata: {},
    status: 'Failure',
    message: `Internal error occurred: ${text}`,
    reason: 'InternalError',
    details: { causes: [{ message: text }] },
    code: 500,
  };
}

/**
 * The error-channel payload for a protocol version, or undefined when nothing is written:
 * - v4/v5: the JSON Status, always (also on success).
 * - v1–v3: nothing on success; on failure the Status message as plain text (`status.Error()`),
 *   which kubectl prints as `error executing remote command: <text>` without an exit code.
 */
export function statusPayload(
  version: RemoteCommandVersion,
  kind: SessionKind,
  command: readonly string[],
  outcome: SessionOutcome,
): string | undefined {
  const status = remoteCommandStatus(kind, command, outcome);
  if (version === 'v4' || version === 'v5') return JSON.stringify(status);
  return status.status === 'Success' ? undefined : (status.message ?? 'unknown error');
}
