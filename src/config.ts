/**
 * Settings are read once at start into a frozen object. A bad value stops the
 * process before anything listens, naming the variable, so a typo in a
 * ConfigMap is a crash-loop with a clear log line rather than a silent default.
 */
import { accessSync, constants, readFileSync } from 'node:fs';
import { isIP } from 'node:net';

export type LogLevel = 'debug' | 'info' | 'warn' | 'error';

/** How the pod proves itself to NATS: a user and password, an nkey seed in a file, or nothing (a local server). */
export type NatsAuth =
  | { readonly kind: 'none' }
  | { readonly kind: 'password'; readonly user: string; readonly password: string }
  | { readonly kind: 'nkey'; readonly seedFile: string };

/** PEM files for a TLS connection to NATS: a CA to trust, and a client certificate with its key when the server asks for one. */
export interface NatsTls {
  readonly caFile?: string;
  readonly certFile?: string;
  readonly keyFile?: string;
}

export interface Config {
  /** Listen address: loopback unless HOST says otherwise, or AUTH=on (callers must then show a key). */
  readonly host: string;
  readonly port: number;
  /** `/metrics` listens here, apart from the public port: loopback unless METRICS_HOST says otherwise; 0 picks a free port. */
  readonly metricsHost: string;
  readonly metricsPort: number;
  /** The bearer token a scrape of `/metrics` must show (METRICS_TOKEN, or the file METRICS_TOKEN_FILE); undefined: none. */
  readonly metricsToken: string | undefined;
  /** How long one render of `/metrics` answers every scrape; 0 renders per scrape (concurrent scrapes still share one). */
  readonly metricsCacheMs: number;
  /** Host names the service answers to, beyond loopback names and IP addresses (`*.` a subdomain wildcard, `*` any). */
  readonly allowedHosts: readonly string[];
  /** Proxies (addresses and CIDR blocks) whose word on the client's address is taken, in `proxyHeader`. */
  readonly trustedProxies: readonly string[];
  readonly proxyHeader: 'x-forwarded-for' | 'forwarded';
  /** Browser origins that may open `/ingest`; `*` is any. A handshake without Origin (not a browser) is not checked. */
  readonly ingestOrigins: readonly string[];
  /** Browser origins that may open `/ws`: `self` is the service's own (the board), `*` is any. */
  readonly wsOrigins: readonly string[];
  /** Postgres to use; undefined starts the embedded server. */
  readonly databaseUrl: string | undefined;
  readonly embeddedPgDir: string;
  /** 0 picks a free port. */
  readonly embeddedPgPort: number;
  readonly demoData: boolean;
  readonly simulator: boolean;
  /** Which uWebSockets.js build to load (http/uws.ts reads it at import); auto tries the newest first. */
  readonly uwsBuild: 'auto' | '20.57' | '20.30';
  /** API keys and roles; off makes every caller the client `public`. */
  readonly auth: boolean;
  readonly restRateLimit: number;
  /** Wrong API keys one address, or one key ID, may send at once (0 = no throttle), and earns back per second. */
  readonly authFailureBurst: number;
  readonly authFailuresPerSecond: number;
  /** Addresses, and key IDs, the wrong-key throttle remembers at most. */
  readonly authFailureSources: number;
  readonly wsMaxSocketsPerKey: number;
  /** WS_MAX_SOCKETS, or (unset) what the open-file limit leaves for a reconnect storm, at most 50,000. */
  readonly wsMaxSockets: number;
  /** The open-file limit wsMaxSockets was derived from; undefined when WS_MAX_SOCKETS set it, or the limit is unknown. */
  readonly wsMaxSocketsFromFiles: number | undefined;
  /** New `/ws` sockets per second per source (its API key with AUTH=on, else its address) and on the pod, and subscribe requests likewise; 0 is off. */
  readonly wsHandshakesPerSource: number;
  readonly wsHandshakesPerSecond: number;
  readonly wsSubscribesPerSource: number;
  readonly wsSubscribesPerSecond: number;
  /** Sources the per-source limits remember at once. */
  readonly wsAdmissionSources: number;
  readonly logLevel: LogLevel;
  readonly logPretty: boolean;
  readonly maxBodyBytes: number;
  /** Bytes of request bodies still arriving from one API key (one address with AUTH=off). */
  readonly bodyBytesPerSource: number;
  /** Memory the REST answer cache may use, answers and keys together. */
  readonly answerCacheBytes: number;
  readonly pgPoolMax: number;
  readonly pgConnectTimeoutMs: number;
  readonly pgStatementTimeoutMs: number;
  /** How long a reference write waits for rows another transaction holds before it is refused as busy. */
  readonly pgLockWaitMs: number;
  readonly wsMaxMarkets: number;
  /** Markets a client's stored set (REST subscribe) may hold. */
  readonly clientMaxMarkets: number;
  /** Batches one `/ingest` connection may have in flight. */
  readonly ingestMaxInFlight: number;
  /** Bytes of batches one `/ingest` connection may have queued and not yet answered. */
  readonly ingestQueueBytes: number;
  /** The same across all of one API key's connections and REST posts. */
  readonly ingestKeyQueueBytes: number;
  /** The process's event-loop delay past which publishers' acks wait for it to pass. */
  readonly ingestMaxLoopDelayMs: number;
  /** How far ahead of the server's clock an odds image's source time may be before it is refused. */
  readonly ingestMaxSkewMs: number;
  /** How old an odds image's source time may be before it is published as `late`. */
  readonly ingestLateMs: number;
  /** How often the LISTEN connection is pinged to find it half-open. */
  readonly pgListenPingMs: number;
  readonly wsMaxMessageBytes: number;
  readonly wsMessagesPerSecond: number;
  /** `/ws` messages and bytes per second per API key, all its sockets together (AUTH=on). */
  readonly wsKeyMessagesPerSecond: number;
  readonly wsKeyBytesPerSecond: number;
  readonly wsSlowBytes: number;
  readonly wsMaxBackpressure: number;
  readonly wsSlowCloseMs: number;
  /** The age a price may reach on a subscriber's screen before the socket is told its markets are behind. */
  readonly wsMaxAgeMs: number;
  /** How often every subscriber socket is sent the server's time (a `clock` frame); 0 never. */
  readonly wsClockMs: number;
  readonly wsIdleTimeoutS: number;
  readonly wsCompression: boolean;
  readonly feedStaleMs: number;
  readonly ingestMaxItems: number;
  readonly simulatorIntervalMs: number;
  readonly lifecycleIntervalMs: number;
  readonly drainDelayMs: number;
  readonly bus: 'memory' | 'nats';
  readonly natsUrl: string;
  readonly natsPrefix: string;
  readonly natsAuth: NatsAuth;
  /** Undefined: plain TCP (unless NATS_URL is tls://). */
  readonly natsTls: NatsTls | undefined;
  readonly shutdownTimeoutMs: number;
  /** Record every published price, state and socket ledger (docs/record.md). */
  readonly record: boolean;
  /** The record's own Postgres; undefined: the service's database. */
  readonly recordDatabaseUrl: string | undefined;
  /** Days of record kept before today; older days' partitions are dropped whole. */
  readonly recordDays: number;
  /** Entries the in-process record queue holds (BUS=memory) before it drops its oldest. */
  readonly recordQueueMax: number;
  /** Bytes the NATS stream holds for the recorder (BUS=nats) before it drops its oldest. */
  readonly recordBusBytes: number;
  /** Entries the recorder writes in one batch at most. */
  readonly recordBatch: number;
  readonly recordFlushMs: number;
  /** How far behind the recorder's clock an entry may reach it; the record's complete mark stays that far back (docs/record.md). */
  readonly recordSettleMs: number;
}

export class ConfigError extends Error {
  override name = 'ConfigError';
  constructor(readonly variable: string, rule: string) {
    super(`${variable}: ${rule}`);
  }
}

type Env = Readonly<Record<string, string | undefined>>;

/** One variable as `--help` lists it: what it takes and what it is when unset (AUTH=off, no DATABASE_URL). */
export interface Setting {
  readonly name: string;
  readonly rule: string;
  readonly fallback: string;
}

/** Where describeSettings collects what each reader of an Env says of its variable. */
const SETTINGS = Symbol('settings');

function note(env: Env, name: string, rule: string, fallback: unknown): void {
  (env as { [SETTINGS]?: Map<string, Setting> })[SETTINGS]?.set(name, { name, rule, fallback: String(fallback) });
}

function int(env: Env, name: string, fallback: number, min: number, max: number): number {
  note(env, name, `${min} to ${max}`, fallback);
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (!/^\d+$/.test(raw)) throw new ConfigError(name, `must be a whole number, got "${raw}"`);
  const value = Number(raw);
  if (value < min || value > max) throw new ConfigError(name, `must be between ${min} and ${max}, got ${raw}`);
  return value;
}

/** 0 (off), or a whole number from `min` to `max`. */
function intOrOff(env: Env, name: string, fallback: number, min: number, max: number): number {
  const value = int(env, name, fallback, 0, max);
  note(env, name, `0 (off), or ${min} to ${max}`, fallback);
  if (value !== 0 && value < min) throw new ConfigError(name, `must be 0 (off) or between ${min} and ${max}, got ${value}`);
  return value;
}

function bool(env: Env, name: string, fallback: boolean): boolean {
  note(env, name, 'on or off', fallback ? 'on' : 'off');
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (/^(1|true|on|yes)$/i.test(raw)) return true;
  if (/^(0|false|off|no)$/i.test(raw)) return false;
  throw new ConfigError(name, `must be on or off, got "${raw}"`);
}

function oneOf<T extends string>(env: Env, name: string, fallback: T, allowed: readonly T[]): T {
  note(env, name, allowed.join(', '), fallback);
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (!(allowed as readonly string[]).includes(raw)) {
    throw new ConfigError(name, `must be one of ${allowed.join(', ')}, got "${raw}"`);
  }
  return raw as T;
}

/** `scheme://host[:port]` as a browser sends it in Origin: lower case, no path, no default port. */
const ORIGIN = /^https?:\/\/[a-z0-9.-]+(:\d{1,5})?$|^https?:\/\/\[[0-9a-f:.]+\](:\d{1,5})?$/;

/**
 * A comma-separated list of browser origins, plus the words a list may hold:
 * `*` (any origin) and, where `self` is allowed, the service's own origin.
 * An empty value is the empty list: no browser origin at all.
 */
function origins(env: Env, name: string, fallback: readonly string[], words: readonly string[]): readonly string[] {
  note(env, name, `browser origins, comma-separated${words.length ? `, or ${words.join(', ')}` : ''}`, fallback.join(',') || 'none');
  const raw = env[name];
  if (raw === undefined) return Object.freeze([...fallback]);
  const list = raw.split(',').map((o) => o.trim()).filter((o) => o !== '');
  for (const o of list) {
    if (!words.includes(o) && !ORIGIN.test(o)) {
      throw new ConfigError(name, `must list origins such as https://odds.example.com:8443 (lower case, no path)${words.length ? ` or ${words.join(', ')}` : ''}, separated by commas; got "${o}"`);
    }
  }
  return Object.freeze([...new Set(list)]);
}

function databaseUrl(env: Env, name = 'DATABASE_URL', fallback = 'unset: the embedded Postgres'): string | undefined {
  note(env, name, 'a postgres:// URL', fallback);
  const raw = env[name];
  if (raw === undefined || raw === '') return undefined;
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new ConfigError(name, 'must be a postgres:// URL');
  }
  if (url.protocol !== 'postgres:' && url.protocol !== 'postgresql:') {
    throw new ConfigError(name, `must be a postgres:// URL, got protocol "${url.protocol}"`);
  }
  return raw;
}

function natsUrl(env: Env): string {
  note(env, 'NATS_URL', 'a nats://, tls:// or ws(s):// URL', 'nats://127.0.0.1:4222');
  const raw = env.NATS_URL || 'nats://127.0.0.1:4222';
  if (!/^(nats|tls|wss?):\/\/[^\s]+$/.test(raw)) throw new ConfigError('NATS_URL', `must be a nats:// URL, got "${raw}"`);
  return raw;
}

function prefix(env: Env): string {
  note(env, 'NATS_PREFIX', '1 to 32 letters, digits, _ or -', 'odds');
  const raw = env.NATS_PREFIX || 'odds';
  if (!/^[A-Za-z0-9_-]{1,32}$/.test(raw)) throw new ConfigError('NATS_PREFIX', 'must be 1 to 32 letters, digits, _ or -');
  return raw;
}

/** A key's byte budget must hold at least one message of the largest size, or such a message could never be read. */
function keyBytes(env: Env, maxMessage: number): number {
  const value = int(env, 'WS_KEY_BYTES_PER_SECOND', Math.max(1024 * 1024, maxMessage), 256, 1024 * 1024 * 1024);
  note(env, 'WS_KEY_BYTES_PER_SECOND', `WS_MAX_MESSAGE_BYTES (${maxMessage}) to ${1024 * 1024 * 1024}`, Math.max(1024 * 1024, maxMessage));
  if (value < maxMessage) throw new ConfigError('WS_KEY_BYTES_PER_SECOND', `must be at least WS_MAX_MESSAGE_BYTES (${maxMessage}), got ${value}`);
  return value;
}

function readableFile(env: Env, name: string): string | undefined {
  note(env, name, 'a readable file', 'none');
  const raw = env[name];
  if (raw === undefined || raw === '') return undefined;
  try {
    accessSync(raw, constants.R_OK);
  } catch {
    throw new ConfigError(name, `cannot read the file "${raw}"`);
  }
  return raw;
}

function natsAuth(env: Env): NatsAuth {
  note(env, 'NATS_USER', 'a NATS user, with NATS_PASSWORD', 'none');
  note(env, 'NATS_PASSWORD', 'its password', 'none');
  const user = env.NATS_USER || undefined;
  const password = env.NATS_PASSWORD || undefined;
  const seedFile = readableFile(env, 'NATS_NKEY_FILE');
  if (seedFile && (user || password)) throw new ConfigError('NATS_NKEY_FILE', 'give either NATS_NKEY_FILE or NATS_USER and NATS_PASSWORD, not both');
  if (seedFile) return { kind: 'nkey', seedFile };
  if (user && !password) throw new ConfigError('NATS_PASSWORD', 'is required when NATS_USER is set');
  if (password && !user) throw new ConfigError('NATS_USER', 'is required when NATS_PASSWORD is set');
  return user && password ? { kind: 'password', user, password } : { kind: 'none' };
}

function natsTls(env: Env): NatsTls | undefined {
  const caFile = readableFile(env, 'NATS_TLS_CA');
  const certFile = readableFile(env, 'NATS_TLS_CERT');
  const keyFile = readableFile(env, 'NATS_TLS_KEY');
  if (!certFile !== !keyFile) throw new ConfigError(certFile ? 'NATS_TLS_KEY' : 'NATS_TLS_CERT', 'NATS_TLS_CERT and NATS_TLS_KEY go together: give both or neither');
  return caFile || certFile ? { caFile, certFile, keyFile } : undefined;
}

/** A host name as ALLOWED_HOSTS lists it: letters, digits, dots and hyphens, `*.` in front for any subdomain. */
const HOST_NAME = /^(\*\.)?[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*$/;

function hostNames(env: Env): readonly string[] {
  note(env, 'ALLOWED_HOSTS', 'host names, comma-separated (*.example.com, *)', 'none');
  const list = (env.ALLOWED_HOSTS ?? '').split(',').map((h) => h.trim().toLowerCase()).filter((h) => h !== '');
  for (const h of list) {
    if (h !== '*' && !HOST_NAME.test(h)) throw new ConfigError('ALLOWED_HOSTS', `must list host names such as odds.example.com or *.example.com (no scheme, no port), or *, separated by commas; got "${h}"`);
  }
  return Object.freeze([...new Set(list)]);
}

/** An address or a CIDR block (`10.0.0.0/8`, `fd00::/8`). */
function isAddressBlock(text: string): boolean {
  const [address, bits, extra] = text.split('/');
  const family = isIP(address);
  if (!family || extra !== undefined) return false;
  return bits === undefined || (/^\d{1,3}$/.test(bits) && Number(bits) <= (family === 4 ? 32 : 128));
}

function proxies(env: Env): readonly string[] {
  note(env, 'TRUSTED_PROXIES', 'addresses and CIDR blocks, comma-separated', 'none');
  const list = (env.TRUSTED_PROXIES ?? '').split(',').map((p) => p.trim()).filter((p) => p !== '');
  for (const p of list) {
    if (!isAddressBlock(p)) throw new ConfigError('TRUSTED_PROXIES', `must list addresses or CIDR blocks such as 10.0.0.0/8 or fd00::/8, separated by commas; got "${p}"`);
  }
  return Object.freeze([...new Set(list)]);
}

/** A bearer token: printable, no spaces, long enough not to be guessed. */
const TOKEN = /^[\x21-\x7e]{16,4096}$/;

function metricsToken(env: Env): string | undefined {
  const file = readableFile(env, 'METRICS_TOKEN_FILE');
  note(env, 'METRICS_TOKEN', '16 to 4096 printable characters', 'none');
  const literal = env.METRICS_TOKEN || undefined;
  if (file && literal) throw new ConfigError('METRICS_TOKEN_FILE', 'give either METRICS_TOKEN or METRICS_TOKEN_FILE, not both');
  const [name, token] = file ? ['METRICS_TOKEN_FILE', readFileSync(file, 'utf8').trim()] : ['METRICS_TOKEN', literal];
  if (token !== undefined && !TOKEN.test(token)) throw new ConfigError(name, 'the token must be 16 to 4096 printable characters without spaces');
  return token;
}


/** Files the process keeps beside its sockets: Postgres, NATS, publishers, logs, the event loop's own. */
export const OWN_FILES = 1024;
const WS_MAX_SOCKETS = 50_000;

/**
 * The process's open-file limit, which Node raised to the hard one as it started; undefined where
 * unlimited or unknown (only Linux states it, in /proc).
 */
export function openFileLimit(): number | undefined {
  try {
    const limit = /^Max open files\s+(\d+)/m.exec(readFileSync('/proc/self/limits', 'utf8'))?.[1];
    return limit ? Number(limit) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Sockets a process with this open-file limit can hold through a silent reconnect storm: each
 * vanished client's dead socket stays beside its new one until the idle timeout (docs/storms.md),
 * so each takes two files, after the process's own (half the limit where that is small).
 */
export const socketsFor = (openFiles: number): number => Math.max(1, Math.floor((openFiles - Math.min(OWN_FILES, Math.floor(openFiles / 2))) / 2));

export function loadConfig(env: Env = process.env, openFiles: number | undefined = openFileLimit()): Config {
  const url = databaseUrl(env);
  const embedded = url === undefined;
  const auth = oneOf(env, 'AUTH', 'off', ['off', 'on'] as const) === 'on';
  const wsMaxMessageBytes = int(env, 'WS_MAX_MESSAGE_BYTES', 64 * 1024, 256, 16 * 1024 * 1024);
  // With auth off anyone who reaches the port may publish prices, so only this machine may reach it.
  note(env, 'HOST', 'an address to listen on', '127.0.0.1 (0.0.0.0 with AUTH=on)');
  const host = env.HOST || (auth ? '0.0.0.0' : '127.0.0.1');
  const port = int(env, 'PORT', 8080, 0, 65535);
  return Object.freeze({
    host,
    port,
    // What it tells is for the operator: open it on purpose, to Prometheus alone (docs/security.md).
    metricsHost: (note(env, 'METRICS_HOST', 'an address to listen on', '127.0.0.1'), env.METRICS_HOST || '127.0.0.1'),
    // A free public port (tests) makes a free metrics port too, so services started side by side do not collide.
    metricsPort: int(env, 'METRICS_PORT', port === 0 ? 0 : 9464, 0, 65535),
    metricsToken: metricsToken(env),
    metricsCacheMs: int(env, 'METRICS_CACHE_MS', 1000, 0, 60000),
    allowedHosts: hostNames(env),
    trustedProxies: proxies(env),
    proxyHeader: oneOf(env, 'TRUSTED_PROXY_HEADER', 'x-forwarded-for', ['x-forwarded-for', 'forwarded'] as const),
    ingestOrigins: origins(env, 'INGEST_ORIGINS', [], ['*']),
    // With keys, a page of any origin still needs a subscriber key, and no cookie rides along; without, only the board.
    wsOrigins: origins(env, 'WS_ORIGINS', auth ? ['*'] : ['self'], ['*', 'self']),
    databaseUrl: url,
    embeddedPgDir: (note(env, 'EMBEDDED_PG_DIR', 'a folder', '.data/pg'), env.EMBEDDED_PG_DIR || '.data/pg'),
    embeddedPgPort: int(env, 'EMBEDDED_PG_PORT', 0, 0, 65535),
    demoData: bool(env, 'DEMO_DATA', embedded),
    simulator: bool(env, 'SIMULATOR', embedded),
    uwsBuild: oneOf(env, 'UWS_BUILD', 'auto', ['auto', '20.57', '20.30'] as const),
    auth,
    restRateLimit: int(env, 'REST_RATE_LIMIT', auth ? 200 : 0, 0, 1_000_000),
    authFailureBurst: int(env, 'AUTH_FAILURE_BURST', 20, 0, 1_000_000),
    authFailuresPerSecond: int(env, 'AUTH_FAILURES_PER_SECOND', 1, 1, 1_000_000),
    authFailureSources: int(env, 'AUTH_FAILURE_SOURCES', 10_000, 1, 10_000_000),
    wsMaxSocketsPerKey: int(env, 'WS_MAX_SOCKETS_PER_KEY', 100, 1, 1_000_000),
    ...(note(env, 'WS_MAX_SOCKETS', '1 to 10000000', 'what the open-file limit leaves for a reconnect storm, at most 50000'), env.WS_MAX_SOCKETS || openFiles === undefined
      ? { wsMaxSockets: int(env, 'WS_MAX_SOCKETS', WS_MAX_SOCKETS, 1, 10_000_000), wsMaxSocketsFromFiles: undefined }
      : { wsMaxSockets: Math.min(WS_MAX_SOCKETS, socketsFor(openFiles)), wsMaxSocketsFromFiles: openFiles }),
    wsHandshakesPerSource: int(env, 'WS_HANDSHAKES_PER_SOURCE', 1000, 0, 10_000_000),
    wsHandshakesPerSecond: int(env, 'WS_HANDSHAKES_PER_SECOND', 8000, 0, 10_000_000),
    wsSubscribesPerSource: int(env, 'WS_SUBSCRIBES_PER_SOURCE', 2000, 0, 10_000_000),
    wsSubscribesPerSecond: int(env, 'WS_SUBSCRIBES_PER_SECOND', 16000, 0, 10_000_000),
    wsAdmissionSources: int(env, 'WS_ADMISSION_SOURCES', 10_000, 1, 10_000_000),
    logLevel: oneOf(env, 'LOG_LEVEL', 'info', ['debug', 'info', 'warn', 'error'] as const),
    logPretty: oneOf(env, 'LOG_FORMAT', process.stdout.isTTY ? 'pretty' : 'json', ['json', 'pretty'] as const) === 'pretty',
    maxBodyBytes: int(env, 'MAX_BODY_BYTES', 1024 * 1024, 1024, 64 * 1024 * 1024),
    bodyBytesPerSource: int(env, 'BODY_BYTES_PER_SOURCE', 32 * 1024 * 1024, 1024, 4 * 1024 * 1024 * 1024),
    answerCacheBytes: int(env, 'ANSWER_CACHE_BYTES', 32 * 1024 * 1024, 64 * 1024, 1024 * 1024 * 1024),
    pgPoolMax: int(env, 'PG_POOL_MAX', 10, 1, 1000),
    pgConnectTimeoutMs: int(env, 'PG_CONNECT_TIMEOUT_MS', 2000, 100, 60000),
    pgStatementTimeoutMs: int(env, 'PG_STATEMENT_TIMEOUT_MS', 5000, 100, 600000),
    pgLockWaitMs: int(env, 'PG_LOCK_WAIT_MS', 30000, 100, 600000),
    wsMaxMarkets: int(env, 'WS_MAX_MARKETS', 2000, 1, 100000),
    clientMaxMarkets: int(env, 'CLIENT_MAX_MARKETS', 2000, 1, 100000),
    ingestMaxInFlight: int(env, 'INGEST_MAX_IN_FLIGHT', 128, 1, 100000),
    ingestQueueBytes: int(env, 'INGEST_QUEUE_BYTES', 8 * 1024 * 1024, 1024, 1024 * 1024 * 1024),
    ingestKeyQueueBytes: int(env, 'INGEST_KEY_QUEUE_BYTES', 32 * 1024 * 1024, 1024, 4 * 1024 * 1024 * 1024),
    ingestMaxLoopDelayMs: int(env, 'INGEST_MAX_LOOP_DELAY_MS', 200, 10, 60000),
    ingestMaxSkewMs: int(env, 'INGEST_MAX_SKEW_MS', 5000, 0, 3600000),
    ingestLateMs: int(env, 'INGEST_LATE_MS', 5000, 100, 86400000),
    pgListenPingMs: int(env, 'PG_LISTEN_PING_MS', 10000, 200, 60000),
    wsMaxMessageBytes,
    wsMessagesPerSecond: int(env, 'WS_MESSAGES_PER_SECOND', 50, 1, 100000),
    wsKeyMessagesPerSecond: int(env, 'WS_KEY_MESSAGES_PER_SECOND', 200, 1, 1_000_000),
    wsKeyBytesPerSecond: keyBytes(env, wsMaxMessageBytes),
    wsSlowBytes: int(env, 'WS_SLOW_BYTES', 256 * 1024, 1024, 1024 * 1024 * 1024),
    wsMaxBackpressure: int(env, 'WS_MAX_BACKPRESSURE', 1024 * 1024, 1024, 1024 * 1024 * 1024),
    wsSlowCloseMs: int(env, 'WS_SLOW_CLOSE_MS', 30000, 100, 3600000),
    wsMaxAgeMs: int(env, 'WS_MAX_AGE_MS', 2000, 200, 60000),
    wsClockMs: intOrOff(env, 'WS_CLOCK_MS', 1000, 100, 60000),
    wsIdleTimeoutS: int(env, 'WS_IDLE_TIMEOUT_S', 32, 8, 960),
    wsCompression: bool(env, 'WS_COMPRESSION', false),
    feedStaleMs: int(env, 'FEED_STALE_MS', 20000, 100, 3600000),
    ingestMaxItems: int(env, 'INGEST_MAX_ITEMS', 5000, 1, 1000000),
    simulatorIntervalMs: int(env, 'SIMULATOR_INTERVAL_MS', 250, 10, 60000),
    lifecycleIntervalMs: int(env, 'LIFECYCLE_INTERVAL_MS', 5000, 10, 3600000),
    drainDelayMs: int(env, 'DRAIN_DELAY_MS', 5000, 0, 600000),
    bus: oneOf(env, 'BUS', 'memory', ['memory', 'nats'] as const),
    natsUrl: natsUrl(env),
    natsPrefix: prefix(env),
    natsAuth: natsAuth(env),
    natsTls: natsTls(env),
    shutdownTimeoutMs: int(env, 'SHUTDOWN_TIMEOUT_MS', 20000, 100, 3600000),
    record: bool(env, 'RECORD', true),
    recordDatabaseUrl: databaseUrl(env, 'RECORD_DATABASE_URL', "unset: the service's database"),
    recordDays: int(env, 'RECORD_DAYS', 400, 1, 36500),
    recordQueueMax: int(env, 'RECORD_QUEUE_MAX', 500_000, 1000, 100_000_000),
    recordBusBytes: int(env, 'RECORD_BUS_BYTES', 1024 * 1024 * 1024, 1024 * 1024, 1024 * 1024 * 1024 * 1024),
    recordBatch: int(env, 'RECORD_BATCH', 5000, 1, 100_000),
    recordFlushMs: int(env, 'RECORD_FLUSH_MS', 250, 0, 10_000),
    recordSettleMs: int(env, 'RECORD_SETTLE_MS', 1000, 0, 600_000),
  });
}

/**
 * Every variable loadConfig reads, in its order, with what each takes and its value when unset,
 * for `--help`: read from loadConfig itself, so the list cannot drift from what is read.
 */
export function describeSettings(): readonly Setting[] {
  const seen = new Map<string, Setting>();
  const env = new Proxy({ [SETTINGS]: seen } as Env, {
    get(target, key) {
      if (typeof key === 'string' && !seen.has(key)) seen.set(key, { name: key, rule: '', fallback: '' });
      return Reflect.get(target, key);
    },
  });
  loadConfig(env, undefined);
  return [...seen.values()];
}
