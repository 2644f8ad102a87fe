import type Docker from 'dockerode';
import type { Logger } from '../../logging/index.js';

const RECONNECT_MS = 1000;

/**
 * Follows Docker's event stream for containers carrying `labelFilter` (filtered by the engine),
 * calling `onEvent` with each event's container ID, action (`die`, `exec_create: sh -c …`; empty
 * when the engine gives none) and actor attributes (the container's labels). The stream
 * reconnects after Docker restarts; `onStream` hears when it is up (the engine answered the
 * subscription: later events will come) and when it ended, so the PLEG can cover what was missed
 * meanwhile with a relist. Returns a stop function.
 */
export function watchContainerEvents(
  docker: Docker,
  labelFilter: string,
  log: Logger,
  onStream: ((up: boolean) => void) | undefined,
  onEvent: (containerId: string, action: string, attributes: Record<string, string>) => void,
): () => void {
  let stopped = false;
  let current: NodeJS.ReadableStream | undefined;
  let timer: NodeJS.Timeout | undefined;

  const connect = async () => {
    if (stopped) return;
    try {
      const stream = await docker.getEvents({ filters: { type: ['container'], label: [labelFilter] } });
      if (stopped) return destroy(stream);
      current = stream;
      onStream?.(true);
      let pending = '';
      stream.on('data', (chunk: Buffer) => {
        pending += chunk.toString('utf8');
        let nl: number;
        while ((nl = pending.indexOf('\n')) >= 0) {
          const line = pending.slice(0, nl).trim();
          pending = pending.slice(nl + 1);
          if (!line) continue;
          try {
            const event = JSON.parse(line) as { id?: string; Action?: string; status?: string; Actor?: { ID?: string; Attributes?: Record<string, string> } };
            onEvent(event.Actor?.ID ?? event.id ?? '', event.Action ?? event.status ?? '', event.Actor?.Attributes ?? {});
          } catch {
            log.debug({ line }, 'Ignoring undecodable Docker event');
          }
        }
      });
      const retry = () => {
        if (current !== stream) return;
        current = undefined;
        if (!stopped) onStream?.(false);
        schedule();
      };
      stream.on('end', retry);
      stream.on('close', retry);
      stream.on('error', (err: Error) => {
        log.debug({ err }, 'Docker event stream failed');
        retry();
      });
    } catch (err) {
      log.debug({ err }, 'Cannot follow Docker events; retrying');
      schedule();
    }
  };
  const schedule = () => {
    if (stopped || timer) return;
    timer = setTimeout(() => {
      timer = undefined;
      void connect();
    }, RECONNECT_MS);
    timer.unref();
  };
  void connect();
  return () => {
    stopped = true;
    if (timer) clearTimeout(timer);
    if (current) destroy(current);
    current = undefined;
  };
}

function destroy(stream: NodeJS.ReadableStream): void {
  (stream as NodeJS.ReadableStream & { destroy?: () => void }).destroy?.();
}
