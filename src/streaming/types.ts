import type { Readable, Writable } from 'node:stream';

/** A terminal size as kubectl sends it on the resize channel (`{"Width":W,"Height":H}`). */
export interface TerminalSize {
  readonly width: number;
  readonly height: number;
}

/**
 * The transport-neutral bundle a remote command runs with (virtual-kubelet's `AttachIO`): the
 * runtime reads `stdin` and writes `stdout`/`stderr`, never seeing WebSocket or SPDY.
 *
 * - `stdin` ends when the client half-closes it (SPDY FIN, WebSocket v5 CLOSE, or disconnect).
 * - `stdout`/`stderr` apply backpressure: a slow client slows the container's output.
 * - `resizes` yields the newest terminal sizes (older pending sizes are dropped) and ends with the session.
 * - `signal` aborts when the client goes away (disconnect, idle timeout) — the runtime then
 *   closes its Docker stream and, after a grace period, kills the process.
 */
export interface StreamIO {
  readonly stdin: Readable | undefined;
  readonly stdout: Writable | undefined;
  readonly stderr: Writable | undefined;
  readonly tty: boolean;
  readonly resizes: AsyncIterable<TerminalSize> | undefined;
  readonly signal: AbortSignal;
}

/**
 * A remote command's streams before the client has opened them all: which ones it asked for
 * (known from the request, so the runtime can prepare the command — Docker's exec create —
 * while the client is still opening them), and the bundle once they are all there. `io` rejects
 * when the client leaves first: the runtime must then never start the command.
 */
export interface PendingStreamIO {
  readonly options: StreamOptions;
  readonly io: Promise<StreamIO>;
}

/** `v1.PodLogOptions` as the kubelet's containerLogs reads them (validated by the route). */
export interface LogOptions {
  readonly follow: boolean;
  readonly timestamps: boolean;
  /** Last N lines only; undefined = all. */
  readonly tailLines?: number;
  /** Only lines at or after this instant (the later of sinceSeconds and sinceTime). */
  readonly since?: Date;
  /** Stop after this many bytes (may cut a line). */
  readonly limitBytes?: number;
  readonly stream: 'All' | 'Stdout' | 'Stderr';
}

/** How a remote command ended, as the runtime reports it. */
export type CommandResult =
  | { readonly kind: 'exited'; readonly exitCode: number }
  /** attach: the container's stream ended (no exit code to report). */
  | { readonly kind: 'detached' };

/** Which streams the client asked for (`input`/`output`/`error`/`tty` on kubelet paths). */
export interface StreamOptions {
  readonly stdin: boolean;
  readonly stdout: boolean;
  readonly stderr: boolean;
  readonly tty: boolean;
}

/**
 * Remote-command protocol versions. Over SPDY the kubelet serves v4…v1 (a v5 offer resolves to
 * v4); over WebSocket `v5.channel.k8s.io` adds the CLOSE signal. `base64` variants are WebSocket only.
 */
export type RemoteCommandVersion = 'v1' | 'v2' | 'v3' | 'v4' | 'v5';
