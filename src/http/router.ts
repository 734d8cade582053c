import type { HttpRequest, HttpResponse, TemplatedApp } from 'uWebSockets.js';
import { errors, known, type ServiceError } from '../errors.js';
import { httpStatus } from './status.js';
import type { HttpMetrics } from '../metrics/http.js';
import type { Logger } from '../log.js';
import { PUBLIC, type Auth, type Principal } from '../auth/auth.js';
import type { Role } from '../auth/keys.js';
import { Exchange, apiKeyHeader, sendError, write, type BodyBudget } from './request.js';
import type { ClientAddresses } from './address.js';
import type { HostPolicy } from './host.js';
import type { ReadyGate } from './readiness.js';
import { framingError, refuseFraming } from './framing.js';

const JSON_TYPE = 'application/json';
/** Logged as the status of a request whose client went away before the answer. */
const ABORTED = 499;

interface Answer {
  body: string | Buffer;
  status?: number;
  type?: string;
  /** Headers besides content-type (an async answer's only). */
  headers?: Readonly<Record<string, string>>;
}

/**
 * Registers routes on the uWS app and does their I/O in one place: handlers
 * return the body (or throw a ServiceError) and never touch the response, so
 * every route gets the same Host check, error bodies, abort handling, corking
 * and metrics. Remembers each path's methods for the 405 and 404 fallbacks.
 */
export class Router {
  private readonly methods = new Map<string, string[]>();
  private inFlight = 0;
  private draining = false;
  private idleWaiters: (() => void)[] = [];

  constructor(
    private readonly app: TemplatedApp,
    private readonly metrics: HttpMetrics,
    private readonly auth: Auth,
    /** Whether routes that need a key may answer yet (not while starting). */
    private readonly gate: ReadyGate,
    private readonly log: Logger,
    /** The names every route answers to, checked before anything else. */
    private readonly hosts: HostPolicy,
    /** Who is calling, by address: what wrong keys are counted against. */
    private readonly addresses: ClientAddresses,
    /** Bytes of bodies still arriving, per key (per address with keys off); routes without bodies need none. */
    private readonly bodies?: BodyBudget,
  ) {}

  /**
   * An answer computed synchronously, from memory. With `need`, the caller's
   * key must have that role (or admin) and the call spends its rate allowance.
   * HEAD is answered too: the same headers, no body.
   */
  get(path: string, fn: (req: HttpRequest, who: Principal) => string | Buffer | Answer, need?: Role): void {
    this.remember(path, 'GET', 'HEAD');
    const handler = (method: 'GET' | 'HEAD') => {
      const counts = this.metrics.route(path, method);
      const head = method === 'HEAD';
      return (res: HttpResponse, req: HttpRequest) => {
        if (this.refusedFraming(res, req, path, method)) return;
        const t0 = performance.now();
        let status: number;
        try {
          this.hosts.check(req.getHeader('host'));
          const out = fn(req, this.who(res, req, need));
          // uWS corks the synchronous top of a handler itself.
          if (typeof out === 'string' || Buffer.isBuffer(out)) {
            status = 200;
            write(res, status, out, undefined, JSON_TYPE, this.draining, head);
          } else {
            status = out.status ?? 200;
            write(res, status, out.body, undefined, out.type ?? JSON_TYPE, this.draining, head);
          }
        } catch (err) {
          status = this.fail(res, err, path, head);
        }
        counts.observe(status, (performance.now() - t0) / 1000);
      };
    };
    this.app.get(path, handler('GET'));
    this.app.head(path, handler('HEAD'));
  }

  /**
   * An answer that needs an await: the abort handler goes on before it. `fn` reads `req` before
   * its first await, or never; its `signal` aborts if the client goes away before its answer.
   * With `need`, as `get`. HEAD too.
   */
  getAsync(path: string, fn: (req: HttpRequest, signal: AbortSignal) => Promise<Answer>, need?: Role): void {
    this.remember(path, 'GET', 'HEAD');
    const handler = (method: 'GET' | 'HEAD') => (res: HttpResponse, req: HttpRequest) => {
      if (this.refusedFraming(res, req, path, method)) return;
      const ex = new Exchange(res, method === 'HEAD');
      let refused = this.hosts.refusal(req.getHeader('host'));
      try {
        if (!refused) this.who(res, req, need);
      } catch (err) {
        refused = err as ServiceError;
      }
      void this.finish(ex, path, method, performance.now(), () => (refused ? Promise.reject(refused) : fn(req, ex.signal)));
    };
    this.app.get(path, handler('GET'));
    this.app.head(path, handler('HEAD'));
  }

  /** A body-carrying request: the key is checked, then the body read whole (within `limit`), then the handler runs. */
  post(path: string, types: readonly string[], limit: number, fn: (body: Buffer, type: string, who: Principal) => Promise<string>, need: Role): void {
    this.remember(path, 'POST');
    this.app.post(path, (res, req) => {
      if (this.refusedFraming(res, req, path, 'POST')) return;
      const t0 = performance.now();
      const ex = new Exchange(res);
      let who: Principal;
      try {
        this.hosts.check(req.getHeader('host'));
        who = this.who(res, req, need);
      } catch (err) {
        void this.finish(ex, path, 'POST', t0, () => Promise.reject(err));
        return;
      }
      const type = req.getHeader('content-type').split(';')[0].trim().toLowerCase();
      const account = this.bodies && { budget: this.bodies, source: this.auth.enabled ? who.keyId : this.addresses.of(res, req) };
      const body = ex.body(req, limit, types, account);
      void this.finish(ex, path, 'POST', t0, async () => ({ body: await fn(await body, type, who) }));
    });
  }

  /** 400 for plain requests to socket routes, 405 with Allow for known paths, 404 for the rest. Call last. */
  fallbacks(socketRoutes: readonly string[]): void {
    const fallback = (path: string, err: (req: HttpRequest) => ServiceError) => (res: HttpResponse, req: HttpRequest) => {
      const method = req.getCaseSensitiveMethod().toUpperCase();
      if (this.refusedFraming(res, req, path, method)) return;
      const e = this.hosts.refusal(req.getHeader('host')) ?? err(req);
      sendError(res, e, this.draining, method === 'HEAD');
      this.metrics.observe(path, method, httpStatus(e), 0);
    };
    for (const path of socketRoutes) this.app.any(path, fallback(path, () => errors.notWebSocket(path)));
    for (const [path, allowed] of this.methods) {
      this.app.any(path, fallback(path, (req) => errors.methodNotAllowed(req.getCaseSensitiveMethod(), path, allowed.join(', '))));
    }
    this.app.any('/*', fallback('unmatched', (req) => errors.notFound(req.getUrl())));
  }

  /**
   * From now on every answer closes its connection, so keep-alive clients
   * reconnect (to another pod) instead of sending into a process that is about
   * to exit. Resolves when no request that awaits is still being answered.
   */
  drain(): Promise<void> {
    this.draining = true;
    return this.inFlight === 0 ? Promise.resolve() : new Promise((ok) => this.idleWaiters.push(ok));
  }

  /** The caller, checked against `need` and rate-limited; public routes need no key. */
  private who(res: HttpResponse, req: HttpRequest, need: Role | undefined): Principal {
    if (!need) return PUBLIC;
    const closed = this.gate.closed();
    if (closed) throw errors.notReady(closed);
    // With auth off the header and address are not read: calls into uWS per request for nothing.
    const p = this.auth.enabled ? this.auth.authenticate(apiKeyHeader(req), need, () => this.addresses.of(res, req)) : PUBLIC;
    this.auth.limit(p);
    return p;
  }

  private remember(path: string, ...methods: string[]): void {
    this.methods.set(path, [...(this.methods.get(path) ?? []), ...methods]);
  }

  /** A request whose framing is refused (framing.ts) is answered there, and counted here. */
  private refusedFraming(res: HttpResponse, req: HttpRequest, path: string, method: string): boolean {
    const bad = framingError(req);
    if (!bad) return false;
    refuseFraming(res, bad);
    this.metrics.observe(path, method, httpStatus(bad), 0);
    return true;
  }

  private async finish(ex: Exchange, path: string, method: string, t0: number, fn: () => Promise<Answer>): Promise<void> {
    this.inFlight++;
    let status: number;
    try {
      const out = await fn();
      status = out.status ?? 200;
      if (ex.aborted) status = ABORTED;
      else ex.reply(status, out.body, out.headers, out.type, this.draining);
    } catch (err) {
      status = ex.aborted ? ABORTED : this.failAsync(ex, err, path);
    }
    this.metrics.observe(path, method, status, (performance.now() - t0) / 1000);
    if (--this.inFlight === 0) for (const ok of this.idleWaiters.splice(0)) ok();
  }

  private fail(res: HttpResponse, err: unknown, path: string, head: boolean): number {
    const e = known(err, this.log, path);
    sendError(res, e, this.draining, head);
    return httpStatus(e);
  }

  private failAsync(ex: Exchange, err: unknown, path: string): number {
    const e = known(err, this.log, path);
    ex.fail(e, this.draining);
    return httpStatus(e);
  }
}
