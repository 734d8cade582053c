/**
 * Settings are read once at start into a frozen object. A bad value stops the
 * process before anything listens, naming the variable, so a typo in a
 * ConfigMap is a crash-loop with a clear log line rather than a silent default.
 */
export type LogLevel = 'debug' | 'info' | 'warn' | 'error';

export interface Config {
  readonly host: string;
  readonly port: number;
  /** Postgres to use; undefined starts the embedded server. */
  readonly databaseUrl: string | undefined;
  readonly embeddedPgDir: string;
  /** 0 picks a free port. */
  readonly embeddedPgPort: number;
  readonly demoData: boolean;
  readonly simulator: boolean;
  readonly allowUwsFallback: boolean;
  /** API keys and roles; off makes every caller the client `public`. */
  readonly auth: boolean;
  readonly restRateLimit: number;
  /** Wrong API keys one source address may send at once (0 = no throttle), and earns back per second. */
  readonly authFailureBurst: number;
  readonly authFailuresPerSecond: number;
  /** Source addresses the wrong-key throttle remembers at most. */
  readonly authFailureSources: number;
  readonly wsMaxSocketsPerKey: number;
  readonly wsMaxSockets: number;
  readonly logLevel: LogLevel;
  readonly logPretty: boolean;
  readonly maxBodyBytes: number;
  /** Memory the REST answer cache may use, answers and keys together. */
  readonly answerCacheBytes: number;
  readonly pgPoolMax: number;
  readonly pgConnectTimeoutMs: number;
  readonly pgStatementTimeoutMs: number;
  readonly wsMaxMarkets: number;
  /** Markets a client's stored set (REST subscribe) may hold. */
  readonly clientMaxMarkets: number;
  /** Batches one `/ingest` connection may have in flight. */
  readonly ingestMaxInFlight: number;
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
  readonly shutdownTimeoutMs: number;
}

export class ConfigError extends Error {
  override name = 'ConfigError';
  constructor(readonly variable: string, rule: string) {
    super(`${variable}: ${rule}`);
  }
}

type Env = Readonly<Record<string, string | undefined>>;

function int(env: Env, name: string, fallback: number, min: number, max: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (!/^\d+$/.test(raw)) throw new ConfigError(name, `must be a whole number, got "${raw}"`);
  const value = Number(raw);
  if (value < min || value > max) throw new ConfigError(name, `must be between ${min} and ${max}, got ${raw}`);
  return value;
}

function bool(env: Env, name: string, fallback: boolean): boolean {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (/^(1|true|on|yes)$/i.test(raw)) return true;
  if (/^(0|false|off|no)$/i.test(raw)) return false;
  throw new ConfigError(name, `must be on or off, got "${raw}"`);
}

function oneOf<T extends string>(env: Env, name: string, fallback: T, allowed: readonly T[]): T {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (!(allowed as readonly string[]).includes(raw)) {
    throw new ConfigError(name, `must be one of ${allowed.join(', ')}, got "${raw}"`);
  }
  return raw as T;
}

function databaseUrl(env: Env): string | undefined {
  const raw = env.DATABASE_URL;
  if (raw === undefined || raw === '') return undefined;
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new ConfigError('DATABASE_URL', 'must be a postgres:// URL');
  }
  if (url.protocol !== 'postgres:' && url.protocol !== 'postgresql:') {
    throw new ConfigError('DATABASE_URL', `must be a postgres:// URL, got protocol "${url.protocol}"`);
  }
  return raw;
}

function natsUrl(env: Env): string {
  const raw = env.NATS_URL || 'nats://127.0.0.1:4222';
  if (!/^(nats|tls|wss?):\/\/[^\s]+$/.test(raw)) throw new ConfigError('NATS_URL', `must be a nats:// URL, got "${raw}"`);
  return raw;
}

function prefix(env: Env): string {
  const raw = env.NATS_PREFIX || 'odds';
  if (!/^[A-Za-z0-9_-]{1,32}$/.test(raw)) throw new ConfigError('NATS_PREFIX', 'must be 1 to 32 letters, digits, _ or -');
  return raw;
}

/** A key's byte budget must hold at least one message of the largest size, or such a message could never be read. */
function keyBytes(env: Env, maxMessage: number): number {
  const value = int(env, 'WS_KEY_BYTES_PER_SECOND', Math.max(1024 * 1024, maxMessage), 256, 1024 * 1024 * 1024);
  if (value < maxMessage) throw new ConfigError('WS_KEY_BYTES_PER_SECOND', `must be at least WS_MAX_MESSAGE_BYTES (${maxMessage}), got ${value}`);
  return value;
}

export function loadConfig(env: Env = process.env): Config {
  const url = databaseUrl(env);
  const embedded = url === undefined;
  const auth = oneOf(env, 'AUTH', 'off', ['off', 'on'] as const) === 'on';
  const wsMaxMessageBytes = int(env, 'WS_MAX_MESSAGE_BYTES', 64 * 1024, 256, 16 * 1024 * 1024);
  return Object.freeze({
    host: env.HOST || '0.0.0.0',
    port: int(env, 'PORT', 8080, 0, 65535),
    databaseUrl: url,
    embeddedPgDir: env.EMBEDDED_PG_DIR || '.data/pg',
    embeddedPgPort: int(env, 'EMBEDDED_PG_PORT', 0, 0, 65535),
    demoData: bool(env, 'DEMO_DATA', embedded),
    simulator: bool(env, 'SIMULATOR', embedded),
    allowUwsFallback: bool(env, 'ALLOW_UWS_FALLBACK', false),
    auth,
    restRateLimit: int(env, 'REST_RATE_LIMIT', auth ? 200 : 0, 0, 1_000_000),
    authFailureBurst: int(env, 'AUTH_FAILURE_BURST', 20, 0, 1_000_000),
    authFailuresPerSecond: int(env, 'AUTH_FAILURES_PER_SECOND', 1, 1, 1_000_000),
    authFailureSources: int(env, 'AUTH_FAILURE_SOURCES', 10_000, 1, 10_000_000),
    wsMaxSocketsPerKey: int(env, 'WS_MAX_SOCKETS_PER_KEY', 100, 1, 1_000_000),
    wsMaxSockets: int(env, 'WS_MAX_SOCKETS', 50_000, 1, 10_000_000),
    logLevel: oneOf(env, 'LOG_LEVEL', 'info', ['debug', 'info', 'warn', 'error'] as const),
    logPretty: oneOf(env, 'LOG_FORMAT', process.stdout.isTTY ? 'pretty' : 'json', ['json', 'pretty'] as const) === 'pretty',
    maxBodyBytes: int(env, 'MAX_BODY_BYTES', 1024 * 1024, 1024, 64 * 1024 * 1024),
    answerCacheBytes: int(env, 'ANSWER_CACHE_BYTES', 32 * 1024 * 1024, 64 * 1024, 1024 * 1024 * 1024),
    pgPoolMax: int(env, 'PG_POOL_MAX', 10, 1, 1000),
    pgConnectTimeoutMs: int(env, 'PG_CONNECT_TIMEOUT_MS', 2000, 100, 60000),
    pgStatementTimeoutMs: int(env, 'PG_STATEMENT_TIMEOUT_MS', 5000, 100, 600000),
    wsMaxMarkets: int(env, 'WS_MAX_MARKETS', 2000, 1, 100000),
    clientMaxMarkets: int(env, 'CLIENT_MAX_MARKETS', 2000, 1, 100000),
    ingestMaxInFlight: int(env, 'INGEST_MAX_IN_FLIGHT', 128, 1, 100000),
    pgListenPingMs: int(env, 'PG_LISTEN_PING_MS', 10000, 200, 60000),
    wsMaxMessageBytes,
    wsMessagesPerSecond: int(env, 'WS_MESSAGES_PER_SECOND', 50, 1, 100000),
    wsKeyMessagesPerSecond: int(env, 'WS_KEY_MESSAGES_PER_SECOND', 200, 1, 1_000_000),
    wsKeyBytesPerSecond: keyBytes(env, wsMaxMessageBytes),
    wsSlowBytes: int(env, 'WS_SLOW_BYTES', 256 * 1024, 1024, 1024 * 1024 * 1024),
    wsMaxBackpressure: int(env, 'WS_MAX_BACKPRESSURE', 1024 * 1024, 1024, 1024 * 1024 * 1024),
    wsSlowCloseMs: int(env, 'WS_SLOW_CLOSE_MS', 30000, 100, 3600000),
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
    shutdownTimeoutMs: int(env, 'SHUTDOWN_TIMEOUT_MS', 20000, 100, 3600000),
  });
}
