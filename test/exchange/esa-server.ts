/**
 * A stream server for tests that speaks the exchange's protocol over real TLS
 * on 127.0.0.1 (a free port), with a self-signed certificate kept in
 * fixtures/: it greets each connection with a `connection` message, checks
 * the authentication, accepts the market subscription, and then follows the
 * test's plan for that connection (play the script, go quiet, drop the
 * connection, send garbage). It records every request it read, so tests can
 * check what the client sent.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import tls from 'node:tls';
import type { Test } from 'tap';
import { findRoot } from '../k8s/root.js';
import { DELTAS, IMAGE, clkOf } from './esa-script.js';

const FIXTURES = join(findRoot(), 'test', 'exchange', 'fixtures');
export const TEST_CA_FILE = join(FIXTURES, 'esa-test-cert.pem');
export const TEST_CA = readFileSync(TEST_CA_FILE);
export const APP_KEY = 'test-app-key';
export const SESSION = 'test-session-token';

export type Request = Record<string, any>;

export interface Plan {
  /** Answer the authentication with this FAILURE (and close) instead of checking it. */
  refuseAuth?: { errorCode: string; errorMessage: string };
  /** What to send once the subscription is accepted (each subscription, a resubscription too); nothing more when absent. */
  play?(conn: EsaConnection, subscription: Request): void;
  /** Accept the connection and then say nothing at all, not even the greeting: a hung server. */
  hang?: boolean;
}

export class EsaConnection {
  readonly requests: Request[] = [];
  readonly closed: Promise<void>;
  /** HEARTBEAT changes sent by `beat`. */
  beats = 0;
  private heartbeat: NodeJS.Timeout | undefined;
  private lastClk: string | undefined;
  private muted = false;

  constructor(readonly index: number, private readonly socket: tls.TLSSocket) {
    this.closed = new Promise((ok) => socket.on('close', () => {
      clearInterval(this.heartbeat);
      ok();
    }));
    socket.on('error', () => undefined);
  }

  /** The subscriptions this connection received. */
  get subscriptions(): Request[] {
    return this.requests.filter((r) => r.op === 'marketSubscription');
  }

  send(msg: object): void {
    if ('clk' in msg && typeof msg.clk === 'string') this.lastClk = msg.clk;
    this.sendRaw(JSON.stringify(msg) + '\r\n');
  }

  sendRaw(text: string): void {
    if (!this.socket.destroyed && !this.muted) this.socket.write(text);
  }

  /** Sends one message; false once the socket's buffer is past its mark (the client is not reading). */
  write(msg: object): boolean {
    return this.socket.write(JSON.stringify(msg) + '\r\n');
  }

  /** Calls `f` each time the socket's buffer empties after a write said it was full. */
  onDrain(f: () => void): void {
    this.socket.on('drain', f);
  }

  /** Bytes written and not yet taken by the client's side. */
  get buffered(): number {
    return this.socket.writableLength;
  }

  /** From now on sends nothing, not even answers, while the connection stays open: a hung server. */
  mute(): void {
    this.muted = true;
  }

  /** HEARTBEAT changes every `ms`, carrying the last clk sent, until the connection closes. */
  beat(ms: number): void {
    clearInterval(this.heartbeat);
    this.heartbeat = setInterval(() => {
      if (this.muted) return;
      this.beats++;
      this.send({ op: 'mcm', id: 2, clk: this.lastClk, pt: Date.now(), ct: 'HEARTBEAT' });
    }, ms);
  }

  /** Closes after everything written so far has reached the client, as a server going away does. */
  end(): void {
    clearInterval(this.heartbeat);
    this.socket.end();
  }
}

export class EsaServer {
  readonly connections: EsaConnection[] = [];
  private waiters: (() => void)[] = [];

  private constructor(private readonly server: tls.Server, private readonly plans: Plan[]) {}

  /** A server whose n-th connection follows plans[n] (the last plan for any beyond). */
  static async start(t: Test, plans: Plan[]): Promise<EsaServer> {
    const server = tls.createServer({ key: readFileSync(join(FIXTURES, 'esa-test-key.pem')), cert: TEST_CA });
    const esa = new EsaServer(server, plans);
    server.on('secureConnection', (socket) => esa.accept(socket));
    await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
    t.teardown(() => esa.close());
    return esa;
  }

  get port(): number {
    return (this.server.address() as { port: number }).port;
  }

  /** Resolves once the n-th connection (from 1) has been made. */
  async connection(n: number): Promise<EsaConnection> {
    while (this.connections.length < n) await new Promise<void>((ok) => this.waiters.push(ok));
    return this.connections[n - 1];
  }

  close(): Promise<void> {
    for (const c of this.connections) c.end();
    return new Promise((ok) => this.server.close(() => ok()));
  }

  private accept(socket: tls.TLSSocket): void {
    const conn = new EsaConnection(this.connections.length, socket);
    const plan = this.plans[Math.min(conn.index, this.plans.length - 1)];
    this.connections.push(conn);
    for (const w of this.waiters.splice(0)) w();
    if (plan.hang) return conn.mute();
    let buffered = '';
    socket.setEncoding('utf8').on('data', (text: string) => {
      buffered += text;
      for (let end = buffered.indexOf('\r\n'); end >= 0; end = buffered.indexOf('\r\n')) {
        const req = JSON.parse(buffered.slice(0, end)) as Request;
        buffered = buffered.slice(end + 2);
        conn.requests.push(req);
        this.answer(conn, plan, req);
      }
    });
    conn.send({ op: 'connection', connectionId: `002-${100000 + conn.index}` });
  }

  private answer(conn: EsaConnection, plan: Plan, req: Request): void {
    const fail = (errorCode: string, errorMessage: string) => {
      conn.send({ op: 'status', id: req.id, statusCode: 'FAILURE', errorCode, errorMessage, connectionClosed: true, connectionId: `002-${100000 + conn.index}` });
      conn.end();
    };
    if (req.op === 'authentication') {
      if (plan.refuseAuth) return fail(plan.refuseAuth.errorCode, plan.refuseAuth.errorMessage);
      if (req.appKey !== APP_KEY) return fail('INVALID_APP_KEY', 'Invalid AppKey');
      if (req.session !== SESSION) return fail('INVALID_SESSION_INFORMATION', 'Session token is invalid');
      return conn.send({ op: 'status', id: req.id, statusCode: 'SUCCESS', connectionClosed: false, connectionsAvailable: 9 });
    }
    if (req.op === 'heartbeat') return conn.send({ op: 'status', id: req.id, statusCode: 'SUCCESS', connectionClosed: false });
    if (req.op === 'marketSubscription') {
      conn.send({ op: 'status', id: req.id, statusCode: 'SUCCESS', connectionClosed: false });
      return plan.play?.(conn, req);
    }
    fail('INVALID_REQUEST', `unknown op ${req.op}`);
  }
}

/** Where a subscription resumes in DELTAS: 0 from the image's clk, n after delta n; -1 for a clk never sent. */
export function resumePoint(sub: Request): number {
  if (sub.clk === clkOf(0)) return 0;
  const i = DELTAS.findIndex((d) => d.clk === sub.clk);
  return i < 0 ? -1 : i + 1;
}

/**
 * The script played as the exchange would: a fresh subscription gets the
 * image, one with a clk gets the next delta as a RESUB_DELTA (the changes it
 * missed); then the deltas that follow, up to delta `upTo`, and `then`:
 * heartbeats every 500 ms (`beat`, the default), closing (`drop`), or
 * nothing more on an open connection (`hush`).
 */
export function playScript(opts: { upTo?: number; then?: 'beat' | 'drop' | 'hush' } = {}): Plan['play'] {
  return (conn, sub) => {
    let next = 0;
    if (sub.clk === undefined) {
      conn.send(IMAGE);
    } else {
      const from = resumePoint(sub);
      if (from < 0 || sub.initialClk !== IMAGE.initialClk) {
        conn.send({ op: 'status', id: sub.id, statusCode: 'FAILURE', errorCode: 'INVALID_CLOCK', errorMessage: 'clk not recognised', connectionClosed: true });
        return conn.end();
      }
      const missed = DELTAS[from];
      conn.send(missed ? { ...missed, ct: 'RESUB_DELTA' } : { op: 'mcm', id: 2, clk: sub.clk, pt: Date.now(), ct: 'RESUB_DELTA' });
      next = from + 1;
    }
    for (let i = next; i < Math.min(opts.upTo ?? DELTAS.length, DELTAS.length); i++) conn.send(DELTAS[i]);
    if (opts.then === 'drop') conn.end();
    else if (opts.then === 'hush') conn.mute();
    else conn.beat(500);
  };
}
