/**
 * Every error a caller can see, in one catalogue. Domain code throws a
 * ServiceError carrying a code and a message in the caller's words; each edge
 * maps the code once: HTTP to a status (`http/status.ts`), sockets to a
 * status-0 ack with the same message, import to a rejected item. Nothing
 * below the edges knows about HTTP.
 */
export const ERROR_CODES = [
  'BAD_PARAM', 'BAD_BODY', 'ITEM_REJECTED', 'LIMIT', 'NOT_WEBSOCKET', 'ABORTED',
  'UNAUTHORIZED', 'FORBIDDEN', 'NOT_FOUND', 'METHOD_NOT_ALLOWED', 'TOO_LARGE', 'UNSUPPORTED_TYPE',
  'RATE_LIMITED', 'TOO_MANY_SOCKETS', 'SERVER_FULL', 'BUSY',
  'DB_UNAVAILABLE', 'OUTCOME_UNKNOWN', 'NOT_READY', 'INTERNAL',
] as const;
export type ErrorCode = (typeof ERROR_CODES)[number];

export class ServiceError extends Error {
  constructor(readonly code: ErrorCode, message: string, readonly headers: Readonly<Record<string, string>> = {}) {
    super(message);
  }
}

export const errors = {
  badParam: (name: string, rule: string) => new ServiceError('BAD_PARAM', `${name} ${rule}`),
  badBody: (rule: string) => new ServiceError('BAD_BODY', `request body ${rule}`),
  badItem: (item: string, why: string) => new ServiceError('ITEM_REJECTED', `${item}: ${why}`),
  /** A structure a client grows (its stored set, a socket's markets, batches in flight) is full. */
  limit: (why: string) => new ServiceError('LIMIT', why),
  unauthorized: (why: string) => new ServiceError('UNAUTHORIZED', why),
  forbidden: (why: string) => new ServiceError('FORBIDDEN', why),
  /** A browser page of an origin the route does not allow: `rule` says which origins it does. */
  originRefused: (origin: string, path: string, rule: string) => new ServiceError('FORBIDDEN', `origin ${origin} may not open ${path}: ${rule}`),
  rateLimited: (perSecond: number, retryAfterS: number) =>
    new ServiceError('RATE_LIMITED', `rate limit: at most ${perSecond} requests per second per API key; retry after ${retryAfterS} s`, { 'retry-after': String(retryAfterS) }),
  /** A failed-key throttle: this source sent too many wrong keys; even a right one waits. */
  tooManyFailures: (retryAfterS: number) =>
    new ServiceError('RATE_LIMITED', `too many requests with a wrong API key from this address; retry after ${retryAfterS} s`, { 'retry-after': String(retryAfterS) }),
  /** A socket of this key was closed (4029) for sending on while refused: its new sockets wait. */
  coolingDown: (retryAfterS: number) =>
    new ServiceError('RATE_LIMITED', `a socket of this API key was closed for sending past its rate limit; new sockets may open in ${retryAfterS} s`, { 'retry-after': String(retryAfterS) }),
  /** The publisher's key was revoked before this batch (or this part of it) took effect. */
  keyRevoked: (what = 'this batch was not applied') => new ServiceError('UNAUTHORIZED', `key revoked: ${what}`),
  /** A reconnect storm's protection: new sockets from one source address, or on this pod, past their rate. */
  handshakeRate: (scope: 'source' | 'total', perSecond: number, retryAfterS: number) => scope === 'source'
    ? new ServiceError('RATE_LIMITED', `handshake rate limit: at most ${perSecond} new sockets per second from one address; retry after ${retryAfterS} s`, { 'retry-after': String(retryAfterS) })
    : new ServiceError('BUSY', `handshake rate limit: this server opens at most ${perSecond} new sockets per second; retry after ${retryAfterS} s (another pod may take you)`, { 'retry-after': String(retryAfterS) }),
  subscribeRate: (scope: 'source' | 'total', perSecond: number, retryAfterS: number) =>
    new ServiceError('RATE_LIMITED', `subscribe rate limit: at most ${perSecond} subscribe requests per second ${scope === 'source' ? 'from one address' : 'on this server'}; nothing changed, retry after ${retryAfterS} s`),
  tooManySockets: (perKey: number) => new ServiceError('TOO_MANY_SOCKETS', `this API key already holds its limit of ${perKey} sockets`),
  serverFull: (max: number) => new ServiceError('SERVER_FULL', `this server holds its limit of ${max} sockets; connect again (another pod may take you)`),
  notFound: (path: string) => new ServiceError('NOT_FOUND', `no route for ${path}`),
  /** `/metrics` asked of the public port. */
  metricsElsewhere: (port: string) => new ServiceError('NOT_FOUND', `/metrics is not served on this port: scrape the metrics port (METRICS_PORT, ${port})`),
  methodNotAllowed: (method: string, path: string, allowed: string) =>
    new ServiceError('METHOD_NOT_ALLOWED', `${method} is not allowed on ${path}; use ${allowed}`, { allow: allowed }),
  notWebSocket: (path: string) => new ServiceError('NOT_WEBSOCKET', `${path} takes WebSocket connections only: send a GET with Upgrade: websocket`),
  tooLarge: (limit: number) => new ServiceError('TOO_LARGE', `request body is larger than ${limit} bytes`),
  unsupportedType: (allowed: string) => new ServiceError('UNSUPPORTED_TYPE', `content-type must be ${allowed}`),
  aborted: () => new ServiceError('ABORTED', 'request aborted'),
  databaseDown: () => new ServiceError('DB_UNAVAILABLE', 'the database is unavailable; nothing was changed, try again'),
  /** The commit was sent but never confirmed: the change may or may not have been applied. */
  outcomeUnknown: () => new ServiceError('OUTCOME_UNKNOWN', 'the database did not confirm the commit, so the change may or may not have been applied; sending it again is safe'),
  notReady: (why: string) => new ServiceError('NOT_READY', why),
  internal: () => new ServiceError('INTERNAL', 'internal error; nothing was changed'),
} as const;

/** True for errors that mean Postgres could not answer, whatever the request was. */
export const isDatabaseError = (err: unknown): boolean =>
  err instanceof ServiceError && (err.code === 'DB_UNAVAILABLE' || err.code === 'OUTCOME_UNKNOWN');

/**
 * Close codes the server sends on sockets. 1001 is the standard "going away";
 * the 4xxx codes are the service's own, in the range RFC 6455 leaves to
 * applications.
 */
export const CLOSE = {
  /** Shutting down: reconnect, another pod will take you. */
  GOING_AWAY: 1001,
  /** The socket's API key was revoked. */
  REVOKED: 4003,
  /** Went on sending while over its message or byte rate: see docs/limits.md. */
  RATE: 4029,
  /** Slow consumer: stayed behind past the backpressure limits. */
  SLOW: 4008,
} as const;

/** Where an unknown error is reported: the service's logger, or anything with its `error` method. */
interface ErrorLog {
  error(msg: string, fields?: Record<string, unknown>): void;
}

/**
 * Any thrown value as a ServiceError. One that is not from the catalogue is a
 * bug: logged here, once, with where it happened, and answered as INTERNAL.
 */
export function known(err: unknown, log: ErrorLog, where: string): ServiceError {
  if (err instanceof ServiceError) return err;
  log.error(`${where} failed`, { err: err instanceof Error ? (err.stack ?? err.message) : String(err) });
  return errors.internal();
}
