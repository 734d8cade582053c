import { Counter, type Registry } from 'prom-client';

/** Refusals: bad or missing keys, wrong roles, and every limit that said no. */
export class AuthMetrics {
  readonly rejected: Counter<'reason'>;
  readonly rateLimited: Counter<'scope'>;
  private readonly socketsRefused: Counter<'reason'>;
  private readonly revokedCloses: Counter;

  constructor(registry: Registry) {
    const registers = [registry];
    this.rejected = new Counter({ name: 'odds_auth_rejected_total', help: 'Requests and handshakes refused by auth, by reason (missing, unknown, forbidden)', labelNames: ['reason'], registers });
    this.rateLimited = new Counter({ name: 'odds_rate_limited_total', help: 'Requests and socket messages over their rate, by scope (rest, socket, key: a key\'s /ws budget, wrong_key: a wrong key from a throttled address or key ID, subscribe_source, subscribe_total)', labelNames: ['scope'], registers });
    this.socketsRefused = new Counter({ name: 'odds_ws_refused_total', help: 'Socket handshakes refused by a limit, by reason (per_key, total, handshake_source, handshake_total)', labelNames: ['reason'], registers });
    this.revokedCloses = new Counter({ name: 'odds_revoked_key_closes_total', help: 'Sockets closed because their key was revoked (4003)', registers });
  }

  /** A socket handshake one of the hub's socket limits refused (per_key, total). */
  socketRefused(reason: string): void {
    this.socketsRefused.inc({ reason });
  }

  /** A socket closed because its key was revoked (4003). */
  revokedClose(): void {
    this.revokedCloses.inc();
  }

  /** A handshake or subscribe request over its admission rate: a handshake is a refused socket, a subscribe a rate-limited request. */
  admissionRefused(scope: string): void {
    if (scope.startsWith('handshake')) this.socketsRefused.inc({ reason: scope });
    else this.rateLimited.inc({ scope });
  }
}
