/**
 * What can go wrong on the exchange stream, by code. The codes in capitals
 * that the exchange itself sends (in a `status` message) keep its names, so a
 * user can look them up in the exchange's documentation; the others are ours.
 */
type StreamErrorCode =
  /** Ours: a line over the length limit, a line that is not JSON, a message of the wrong shape, a segmented change past its bounds. */
  | 'LINE_TOO_LONG' | 'BAD_JSON' | 'BAD_MESSAGE' | 'TOO_MANY_SEGMENTS' | 'SEGMENTS_TOO_LARGE' | 'SEGMENTS_STALLED'
  /** Ours: the socket failed, closed, or went quiet for too long. */
  | 'SOCKET' | 'SILENT'
  /** The exchange's: any `errorCode` of a FAILURE status. */
  | string;

const OWN_CODES: ReadonlySet<string> = new Set([
  'LINE_TOO_LONG', 'BAD_JSON', 'BAD_MESSAGE', 'TOO_MANY_SEGMENTS', 'SEGMENTS_TOO_LARGE', 'SEGMENTS_STALLED', 'SOCKET', 'SILENT',
]);

export class StreamError extends Error {
  constructor(readonly code: StreamErrorCode, message: string, readonly fatal = false) {
    super(message);
  }

  /** True when the exchange answered with a FAILURE status; false when the connection itself failed. */
  get refusal(): boolean {
    return !OWN_CODES.has(this.code);
  }
}

/**
 * FAILURE codes that another attempt with the same credentials and filter
 * cannot mend: the client stops and says why rather than retrying forever.
 * Every other code (TIMEOUT, UNEXPECTED_ERROR, CONNECTION_FAILED,
 * MAX_CONNECTION_LIMIT_EXCEEDED, codes added later) is worth a reconnect
 * with backoff.
 */
export const FATAL_CODES: ReadonlySet<string> = new Set([
  'NO_APP_KEY', 'INVALID_APP_KEY', 'NO_SESSION', 'INVALID_SESSION_INFORMATION', 'NOT_AUTHORIZED',
  'INVALID_INPUT', 'INVALID_REQUEST', 'SUBSCRIPTION_LIMIT_EXCEEDED',
]);
