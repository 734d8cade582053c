import { readFileSync } from 'node:fs';
import { ErrorCode, Events, connect, nkeyAuthenticator, type ConnectionOptions, type NatsConnection } from 'nats';
import type { NatsAuth, NatsTls } from '../../config.js';
import type { Logger } from '../../log.js';
import { LineBudget } from '../../lib/line-budget.js';
import { retry } from '../../lib/retry.js';

/** Told when the link connects and drops: the bus (bus.ts). */
export interface LinkListener {
  /** Connected, first time or again: subscriptions are to be put in place, a sync is due. */
  up(nc: NatsConnection): void;
  /** The connection dropped; the client keeps reconnecting. */
  down(): void;
}

export interface LinkOptions {
  url: string;
  name: string;
  auth: NatsAuth;
  tls: NatsTls | undefined;
}

const AUTH_ERRORS: readonly string[] = [ErrorCode.AuthorizationViolation, ErrorCode.AuthenticationExpired];
const isAuthError = (err: unknown): boolean => AUTH_ERRORS.includes((err as { code?: string })?.code ?? '');

/** What to fix when NATS refuses the pod: the variables that hold its credentials. */
function credentialsHint(auth: NatsAuth): string {
  switch (auth.kind) {
    case 'password': return `check NATS_USER ("${auth.user}") and NATS_PASSWORD against the users in the NATS server's authorization block`;
    case 'nkey': return `check that the public key of the seed in NATS_NKEY_FILE (${auth.seedFile}) is a user in the NATS server's authorization block`;
    case 'none': return 'the NATS server requires credentials: set NATS_USER and NATS_PASSWORD, or NATS_NKEY_FILE';
  }
}

function connectOptions(o: LinkOptions): ConnectionOptions {
  const opts: ConnectionOptions = { servers: o.url, name: o.name, maxReconnectAttempts: -1, reconnectTimeWait: 250, timeout: 2000 };
  const { auth, tls } = o;
  if (auth.kind === 'password') Object.assign(opts, { user: auth.user, pass: auth.password });
  // Read at every connect, so a rotated seed is picked up without a restart.
  if (auth.kind === 'nkey') opts.authenticator = nkeyAuthenticator(() => new TextEncoder().encode(readFileSync(auth.seedFile, 'utf8').trim()));
  if (tls) opts.tls = { caFile: tls.caFile, certFile: tls.certFile, keyFile: tls.keyFile };
  return opts;
}

/**
 * One NATS connection for the life of the pod. A pod must start and serve
 * while NATS is away, so the first connect is not awaited past its first
 * failure: it keeps trying in the background, with backoff, for ever; once
 * connected, the client's own reconnect takes over, and a connection that
 * ends for good starts the loop again. Credentials NATS refuses at start are
 * a configuration mistake, not an outage: the start fails, naming what to fix.
 */
export class NatsLink {
  private nc: NatsConnection | undefined;
  /** Closed: a wait for NATS under way ends at once, so no backoff timer outlives the pod's stop. */
  private readonly closed = new AbortController();
  private get closing(): boolean {
    return this.closed.signal.aborted;
  }
  /** The server's complaints (a subject this user may not use) can repeat with every message. */
  private readonly complaints = new LineBudget(5, 60_000);

  constructor(private readonly opts: LinkOptions, private readonly log: Logger, private readonly listener: LinkListener) {}

  get connection(): NatsConnection | undefined {
    return this.nc;
  }

  /** Tries once; on failure keeps trying in the background. Resolves whether it connected; throws if NATS refused the credentials. */
  async start(): Promise<boolean> {
    try {
      await this.connectOnce();
      return true;
    } catch (err) {
      if (isAuthError(err)) throw new Error(`nats refused this pod's credentials (${(err as Error).message}): ${credentialsHint(this.opts.auth)}`);
      this.log.warn('nats unreachable; serving alone until it returns', { url: this.opts.url, err: (err as Error).message });
      void this.keepTrying();
      return false;
    }
  }

  async close(): Promise<void> {
    this.closed.abort();
    const nc = this.nc;
    this.nc = undefined;
    if (nc && !nc.isClosed()) await nc.drain().catch(() => nc.close());
  }

  private async keepTrying(): Promise<void> {
    await retry(() => this.connectOnce(), {
      minMs: 250, maxMs: 5000, signal: this.closed.signal,
      // Credentials may be changing on the server: keep trying, but say what to fix.
      onRetry: (err) => isAuthError(err) && this.log.error('nats refused this pod\'s credentials', { err: (err as Error).message, fix: credentialsHint(this.opts.auth) }),
    }).catch(() => undefined);
  }

  private async connectOnce(): Promise<void> {
    if (this.closing) return;
    const nc = await connect(connectOptions(this.opts));
    if (this.closing) {
      await nc.close();
      return;
    }
    this.nc = nc;
    this.log.info('nats connected', { url: this.opts.url });
    void this.watch(nc);
    void nc.closed().then((err) => {
      if (this.closing || this.nc !== nc) return;
      if (isAuthError(err)) this.log.error('nats refused this pod\'s credentials on reconnect', { err: err!.message, fix: credentialsHint(this.opts.auth) });
      this.nc = undefined;
      this.listener.down();
      void this.keepTrying();
    });
    this.listener.up(nc);
  }

  private async watch(nc: NatsConnection): Promise<void> {
    for await (const s of nc.status()) {
      if (s.type === Events.Disconnect) {
        this.log.warn('nats disconnected; reconnecting');
        this.listener.down();
      } else if (s.type === Events.Reconnect) {
        this.log.info('nats reconnected; resyncing');
        this.listener.up(nc);
      } else if (s.type === Events.Error) {
        const held = this.complaints.spend();
        if (held !== undefined) {
          this.log.error('nats refused an operation: the server\'s authorization must grant this user its prefix and the JetStream API (docs/bus-security.md)', {
            err: String(s.data), operation: s.permissionContext?.operation, subject: s.permissionContext?.subject, held_back: held,
          });
        }
      }
    }
  }
}
