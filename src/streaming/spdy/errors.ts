/**
 * A violation of SPDY/3.1 framing by the peer. The session answers it with GOAWAY carrying
 * `status` (PROTOCOL_ERROR unless stated) and closes; nothing is thrown to the session's owner.
 */
export class SpdyProtocolError extends Error {
  override readonly name = 'SpdyProtocolError';
  readonly code = 'ERR_SPDY_PROTOCOL';

  constructor(
    message: string,
    /** GOAWAY status to send: 1 PROTOCOL_ERROR, 2 INTERNAL_ERROR. */
    readonly status: number = 1,
  ) {
    super(message);
  }
}

/** The session saw no frame (PINGs included) for `idleTimeoutMs`. */
export class SpdyIdleTimeoutError extends Error {
  override readonly name = 'SpdyIdleTimeoutError';
  readonly code = 'ERR_SPDY_IDLE_TIMEOUT';

  constructor(readonly timeoutMs: number) {
    super(`SPDY session idle for ${timeoutMs} ms`);
  }
}
