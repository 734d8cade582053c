/**
 * Every error a caller can see, in one catalogue. Domain code throws a
 * ServiceError carrying a code and a message in the caller's words; each edge
 * maps the code once: HTTP to a status (`http/status.ts`), sockets to a
 * status-0 ack (a refused request) or a notice (the server's word unasked)
 * with the same message (`odds/messages.ts`), import to a rejected item.
 * Nothing below the edges knows about HTTP.
 */
export const ERROR_CODES = [
  'BAD_PARAM', 'BAD_BODY', 'ITEM_REJECTED', 'LIMIT', 'NOT_WEBSOCKET', 'ABORTED',
  'UNAUTHORIZED', 'FORBIDDEN', 'NOT_FOUND', 'METHOD_NOT_ALLOWED', 'MISDIRECTED', 'TOO_LARGE', 'UNSUPPORTED_TYPE',
  'RATE_LIMITED', 'TOO_MANY_SOCKETS', 'SERVER_FULL', 'BUSY',
  'DB_UNAVAILABLE', 'OUTCOME_UNKNOWN', 'NOT_READY', 'INTERNAL',
] as const;
export type ErrorCode = (typeof ERROR_CODES)[number];

export class ServiceError extends Error {
  constructor(readonly code: ErrorCode, message: string, readonly headers: Readonly<Record<string, string>> = {}) {
    super(message);
  }
}

/** Whom the per-source admission limits count: API keys with AUTH=on, addresses for callers without one. */
export type AdmissionSource = 'key' | 'address';
const PER_SOURCE: Readonly<Record<AdmissionSource, string>> = { key: 'per API key', address: 'from one address' };

export const errors = {
  badParam: (name: string, rule: string) => new ServiceError('BAD_PARAM', `${name} ${rule}`),
  badBody: (rule: string) => new ServiceError('BAD_BODY', `request body ${rule}`),
  /** A request whose framing two readers could take differently (RFC 9112): answered, then its connection closed. */
  badFraming: (why: string) => new ServiceError('BAD_PARAM', `${why}: the request is refused and the connection closed`),
  badItem: (item: string, why: string) => new ServiceError('ITEM_REJECTED', `${item}: ${why}`),
  /** A client's stored set would pass its limit: nothing of the request was stored. */
  storedSetFull: (adding: number, limit: number, held: number) =>
    new ServiceError('LIMIT', `subscribing to ${adding} more markets would pass the limit of ${limit} stored markets per client (it holds ${held}); unsubscribe some first`),
  /** A publisher that pipelines past its bound of unanswered batches. */
  batchesInFlight: (max: number) =>
    new ServiceError('LIMIT', `${max} batches are already in flight on this connection; wait for their acks before sending more (this batch was not applied)`),
  /** A publisher's batches not yet answered would pass the bytes its connection or its key may queue. */
  ingestQueueFull: (scope: 'connection' | 'key', queued: number, max: number) =>
    new ServiceError('LIMIT', `${queued} bytes of batches are already queued on this ${scope === 'key' ? 'API key' : 'connection'} (the limit is ${max}); wait for their acks before sending more (this batch was not applied)`),
  /** A caller's bodies still arriving would pass what one source may have received at once: this one is not read. */
  bodiesInFlight: (held: number, max: number) =>
    new ServiceError('RATE_LIMITED', `${held} bytes of request bodies from this caller are still arriving (the limit is ${max}); send this once one of them is answered (this request was not read)`, { 'Retry-After': '1' }),
  keyMissing: () => new ServiceError('UNAUTHORIZED', 'an API key is required: send it in the x-api-key header'),
  keyUnknown: () => new ServiceError('UNAUTHORIZED', 'the API key is not valid or was revoked'),
  /** `/ws` with a key in its header and another in its URL: taking either would act as a key its caller may not have meant. */
  keysDiffer: () => new ServiceError('UNAUTHORIZED', 'the x-api-key header and ?key= in the URL name different API keys: send one key, in one of them'),
  keysRepeated: () => new ServiceError('UNAUTHORIZED', 'the x-api-key header is given more than once, naming different API keys: send one key, once'),
  /** A publisher's key in the `/ingest` URL: URLs end up in logs, so it is refused even when right. */
  keyInUrl: () => new ServiceError('UNAUTHORIZED', 'publishers send the API key in the x-api-key header only; a key in the /ingest URL is refused (and should be treated as exposed)'),
  roleForbidden: (role: string, need: string) => new ServiceError('FORBIDDEN', `this API key's role (${role}) may not do this; it needs ${need}`),
  /** A Host the service does not answer to (a page on a rebound name, a misrouted request): `rule` says which it does. */
  hostRefused: (host: string, rule: string) => new ServiceError('MISDIRECTED', `host ${host} is not a name of this service: ${rule}`),
  /** A scrape without the metrics port's bearer token. */
  metricsToken: () => new ServiceError('UNAUTHORIZED', 'the metrics port needs its bearer token (METRICS_TOKEN): send Authorization: Bearer <token>', { 'www-authenticate': 'Bearer' }),
  /** A browser page of an origin the route does not allow: `rule` says which origins it does. */
  originRefused: (origin: string, path: string, rule: string) => new ServiceError('FORBIDDEN', `origin ${origin} may not open ${path}: ${rule}`),
  rateLimited: (perSecond: number, retryAfterS: number) =>
    new ServiceError('RATE_LIMITED', `rate limit: at most ${perSecond} requests per second per API key; retry after ${retryAfterS} s`, { 'retry-after': String(retryAfterS) }),
  /** The wrong-key throttle: too many wrong keys from this address, or naming this key ID. A right key is not held back. */
  tooManyFailures: (scope: 'address' | 'key', retryAfterS: number) =>
    new ServiceError('RATE_LIMITED', `too many requests with a wrong API key ${scope === 'address' ? 'from this address' : 'for this key ID'}; retry after ${retryAfterS} s`, { 'retry-after': String(retryAfterS) }),
  /** A socket of this key was closed (4029) for sending on while refused: its new sockets wait. */
  coolingDown: (retryAfterS: number) =>
    new ServiceError('RATE_LIMITED', `a socket of this API key was closed for sending past its rate limit; new sockets may open in ${retryAfterS} s`, { 'retry-after': String(retryAfterS) }),
  /** The publisher's key was revoked before this batch (or this part of it) took effect. */
  keyRevoked: (what = 'this batch was not applied') => new ServiceError('UNAUTHORIZED', `key revoked: ${what}`),
  /**
   * A reconnect storm's protection: new sockets from one caller (its API key with AUTH=on, else
   * its address), or on this pod, past their rate.
   */
  handshakeRate: (scope: 'source' | 'total', perSecond: number, retryAfterS: number, source: AdmissionSource) => scope === 'source'
    ? new ServiceError('RATE_LIMITED', `handshake rate limit: at most ${perSecond} new sockets per second ${PER_SOURCE[source]}; retry after ${retryAfterS} s`, { 'retry-after': String(retryAfterS) })
    : new ServiceError('BUSY', `handshake rate limit: this server opens at most ${perSecond} new sockets per second; retry after ${retryAfterS} s (another pod may take you)`, { 'retry-after': String(retryAfterS) }),
  subscribeRate: (scope: 'source' | 'total', perSecond: number, retryAfterS: number, source: AdmissionSource) =>
    new ServiceError('RATE_LIMITED', `subscribe rate limit: at most ${perSecond} subscribe requests per second ${scope === 'source' ? PER_SOURCE[source] : 'on this server'}; nothing changed, retry after ${retryAfterS} s`),
  /** A socket message refused unread: over the socket's, or its key's, message or byte rate. */
  messageRate: (scope: 'socket' | 'key', limit: number, unit: 'messages' | 'bytes') =>
    new ServiceError('RATE_LIMITED', `rate limit: at most ${limit} ${unit} per second ${scope === 'socket' ? 'per socket' : 'per API key, all its sockets together'}`),
  messageTooLarge: (bytes: number, limit: number) => new ServiceError('TOO_LARGE', `message is ${bytes} bytes; the limit is ${limit}`),
  /** A socket message that could not be read as a request: `why` names what is wrong in it. */
  badMessage: (why: string) => new ServiceError('BAD_BODY', why),
  /**
   * Markets a socket could not take: past its limit, however they were asked for (a subscribe,
   * an event or sport filter, the client's stored set). A refused subscribe names those past the
   * limit and changes nothing; a notice names those left out.
   */
  socketMarkets: (over: readonly string[], max: number) =>
    new ServiceError('LIMIT', `${listed('market', over)} did not fit: a socket holds at most ${max} markets`),
  socketFilters: (more: number, max: number) => new ServiceError('LIMIT', `${more} more event and sport filters would pass the limit of ${max} per socket`),
  /** A new socket's stored set could not be read yet: it follows once Postgres answers. */
  storedSetPending: () => new ServiceError('DB_UNAVAILABLE', 'your client\'s stored markets could not be loaded yet (the database is unavailable); retrying, they will follow'),
  tooManySockets: (perKey: number) => new ServiceError('TOO_MANY_SOCKETS', `this API key already holds its limit of ${perKey} sockets`),
  serverFull: (max: number) => new ServiceError('SERVER_FULL', `this server holds its limit of ${max} sockets; connect again (another pod may take you)`),
  notFound: (path: string) => new ServiceError('NOT_FOUND', `no route for ${path}`),
  recordOff: () => new ServiceError('NOT_FOUND', 'this service keeps no record (RECORD=off)'),
  connectionUnknown: (conn: string, at?: number) => new ServiceError('NOT_FOUND', `the record holds no connection ${conn}${at === undefined ? '' : ' opened at or before that time'}`),
  recordBusy: (reads: number, waitedMs: number) =>
    new ServiceError('BUSY', `${reads} reads of the record already hold their share of the database's connections and none ended within ${waitedMs} ms; try again`, { 'retry-after': '1' }),
  recordTooLong: (what: string, more: string, hint: string) => new ServiceError('LIMIT', `${what} has more than ${more}; ${hint}`),
  /** `/metrics` asked of the public port. */
  metricsElsewhere: (port: string) => new ServiceError('NOT_FOUND', `/metrics is not served on this port: scrape the metrics port (METRICS_PORT, ${port})`),
  methodNotAllowed: (method: string, path: string, allowed: string) =>
    new ServiceError('METHOD_NOT_ALLOWED', `${method} is not allowed on ${path}; use ${allowed}`, { allow: allowed }),
  notWebSocket: (path: string) => new ServiceError('NOT_WEBSOCKET', `${path} takes WebSocket connections only: send a GET with Upgrade: websocket`),
  tooLarge: (limit: number) => new ServiceError('TOO_LARGE', `request body is larger than ${limit} bytes`),
  unsupportedType: (allowed: string) => new ServiceError('UNSUPPORTED_TYPE', `content-type must be ${allowed}`),
  aborted: () => new ServiceError('ABORTED', 'request aborted'),
  databaseDown: () => new ServiceError('DB_UNAVAILABLE', 'the database is unavailable; nothing was changed, try again'),
  /** Rows a batch writes stayed taken by another transaction past PG_LOCK_WAIT_MS (or it kept crossing them): a wait, never an outage. */
  rowsBusy: () => new ServiceError('BUSY', 'another batch is writing the same rows and held them past PG_LOCK_WAIT_MS; nothing was changed, send it again', { 'retry-after': '1' }),
  /** The commit was sent but never confirmed: the change may or may not have been applied. */
  outcomeUnknown: () => new ServiceError('OUTCOME_UNKNOWN', 'the database did not confirm the commit, so the change may or may not have been applied; sending it again is safe'),
  /** Committed, but this pod could not read it back into what it serves (acks wait for that): the database went away meanwhile. */
  writtenNotShown: () => new ServiceError('DB_UNAVAILABLE', 'the change was written, but this server could not load it back to serve it (the database is unavailable); sending it again is safe'),
  notReady: (why: string) => new ServiceError('NOT_READY', why),
  /** A publisher's batch that arrived as this pod began to shut down. */
  shuttingDown: () => new ServiceError('NOT_READY', 'the server is shutting down; send this batch to another pod (it was not applied)'),
  internal: () => new ServiceError('INTERNAL', 'internal error; nothing was changed'),
} as const;

/** IDs named in a message: the first few, then how many more, so a long list cannot make a huge frame. */
const NAMED = 10;
function listed(noun: string, ids: readonly string[]): string {
  const shown = ids.slice(0, NAMED).join(',');
  return `${noun}${ids.length === 1 ? '' : 's'} ${shown}${ids.length > NAMED ? ` and ${ids.length - NAMED} more` : ''}`;
}

/** True for errors that mean Postgres could not answer, whatever the request was. */
export const isDatabaseError = (err: unknown): boolean =>
  err instanceof ServiceError && (err.code === 'DB_UNAVAILABLE' || err.code === 'OUTCOME_UNKNOWN');

/** How the server closes a socket: the code and the reason sent with it, always together. */
export interface Close {
  readonly code: number;
  readonly reason: string;
}

/**
 * Every close the server sends on sockets, subscribers and publishers alike,
 * each with its one reason. 1001 is the standard "going away"; the 4xxx codes
 * are the service's own, in the range RFC 6455 leaves to applications.
 */
export const CLOSE = {
  /** Shutting down: reconnect, another pod will take you. */
  GOING_AWAY: { code: 1001, reason: 'server shutting down' },
  /** The socket's API key was revoked. */
  REVOKED: { code: 4003, reason: 'API key revoked' },
  /** Went on sending while over its message or byte rate: see docs/limits.md. */
  RATE: { code: 4029, reason: 'rate limit exceeded persistently' },
  /** Slow consumer: stayed behind past the backpressure limits. */
  SLOW: { code: 4008, reason: 'slow consumer' },
} as const satisfies Record<string, Close>;

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
