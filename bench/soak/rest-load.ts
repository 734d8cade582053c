/**
 * The soak's REST load, all to 127.0.0.1 and bounded in rate: reads over keep-alive connections
 * (with a share of bad requests), market state toggles through `POST /api/v1/ingest`, and windows
 * of REST subscribe/unsubscribe. Timers only, no busy loops: the service shares the machine.
 */
import http from 'node:http';
import type { Catalog, OpenMarket } from './catalog.js';
import { Problems, pickOne, pickSome, rnd, sleep } from './util.js';

// ---- HTTP ----

export interface Answer {
  status: number;
  text: string;
}

/** Keep-alive HTTP to the service: at most `maxSockets` connections, reused. */
export class Http {
  private readonly agent: http.Agent;

  constructor(private readonly port: number, maxSockets = 8) {
    this.agent = new http.Agent({ keepAlive: true, maxSockets, maxFreeSockets: maxSockets });
  }

  request(method: string, path: string, body?: string): Promise<Answer> {
    return new Promise((ok, fail) => {
      const headers: http.OutgoingHttpHeaders = body === undefined ? {} : { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) };
      const req = http.request({ host: '127.0.0.1', port: this.port, method, path, agent: this.agent, headers }, (res) => {
        const parts: Buffer[] = [];
        res.on('data', (c: Buffer) => parts.push(c));
        res.on('end', () => ok({ status: res.statusCode ?? 0, text: Buffer.concat(parts).toString('utf8') }));
        res.on('error', fail);
      });
      req.setTimeout(10_000, () => req.destroy(new Error('no answer within 10 s')));
      req.on('error', fail);
      req.end(body);
    });
  }

  close(): void {
    this.agent.destroy();
  }
}

// ---- REST reads ----

interface Shot {
  route: string;
  method: 'GET' | 'POST';
  path: string;
  body?: string;
  expect: number;
}

/** Requests answered wrongly on purpose: the error paths run under load too. */
const BAD: Shot[] = [
  { route: 'bad: si not a number', method: 'GET', path: '/api/v1/sports/events?si=abc', expect: 400 },
  { route: 'bad: eid missing', method: 'GET', path: '/api/v1/events/markets', expect: 400 },
  { route: 'bad: unknown route', method: 'GET', path: '/api/v1/nothing-here', expect: 404 },
  { route: 'bad: wrong method', method: 'POST', path: '/api/v1/sports', body: '{}', expect: 405 },
  { route: 'bad: empty subscribe', method: 'POST', path: '/api/v1/subscribe', body: '{"data":[]}', expect: 400 },
  // An odds item for an unknown market is refused alone inside a 200; a batch that is not a list is refused whole.
  { route: 'bad: ingest data not a list', method: 'POST', path: '/api/v1/ingest', body: '{"data":5}', expect: 400 },
];

/** REST reads across every data route at a steady rate, plus a few refused requests. */
export class RestLoad {
  sent = 0;
  answered = 0;
  /** Client-observed 5xx answers. */
  fiveXX = 0;
  /** Requests not sent because too many were in flight (the service or this process fell behind). */
  shed = 0;
  readonly byRoute = new Map<string, Map<number, number>>();
  private inflight = 0;
  private budget = 0;
  private timer: NodeJS.Timeout | undefined;
  private last: number | undefined;
  private n = 0;

  constructor(private readonly http: Http, private readonly cat: Catalog, private readonly rps: number, private readonly problems: Problems) {}

  start(): void {
    this.timer = setInterval(() => this.tick(), 50);
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    for (let t = 0; this.inflight > 0 && t < 10_000; t += 20) await sleep(20);
  }

  private tick(): void {
    // Timers run late on a busy machine: the budget follows the clock (at most 1 s of it at once).
    const now = performance.now();
    this.budget += (this.rps * Math.min(1000, now - (this.last ?? now - 50))) / 1000;
    this.last = now;
    while (this.budget >= 1) {
      this.budget -= 1;
      if (this.inflight >= 128) this.shed++;
      else this.fire(this.pick());
    }
  }

  private pick(): Shot {
    const r = Math.random();
    const { sis, lis, eids, mids } = this.cat;
    const get = (route: string, path: string): Shot => ({ route, method: 'GET', path, expect: 200 });
    if (r < 0.12) return get('sports', '/api/v1/sports');
    if (r < 0.32) {
      const li = Math.random() < 0.3 ? '&li=' + pickSome(lis, 1 + rnd(3)).join(',') : '';
      return get('events', `/api/v1/sports/events?si=${pickSome(sis, 1 + rnd(5)).join(',')}${li}`);
    }
    if (r < 0.57) {
      const ids = pickSome(eids, 1 + rnd(10)).map(String);
      if (Math.random() < 0.1) ids.push('99999999');
      return get('markets', `/api/v1/events/markets?eid=${ids.join(',')}`);
    }
    if (r < 0.85) {
      const ids = pickSome(mids, 1 + rnd(49));
      if (Math.random() < 0.1) ids.push('soak.none');
      return get('results', `/api/v1/markets/result?mid=${ids.join(',')}`);
    }
    if (r < 0.91) return get('health', '/health');
    if (r < 0.97) return get('ready', '/ready');
    return pickOne(BAD);
  }

  private fire(s: Shot): void {
    this.inflight++;
    this.sent++;
    const check = ++this.n % 25 === 0;
    this.http.request(s.method, s.path, s.body).then(
      (a) => {
        this.answered++;
        const statuses = this.byRoute.get(s.route) ?? new Map<number, number>();
        this.byRoute.set(s.route, statuses.set(a.status, (statuses.get(a.status) ?? 0) + 1));
        if (a.status >= 500) this.fiveXX++;
        if (a.status !== s.expect) this.problems.note('REST answer', `${s.method} ${s.path.slice(0, 120)} answered ${a.status}, expected ${s.expect}: ${a.text.slice(0, 200)}`);
        else if (check) {
          try {
            JSON.parse(a.text);
          } catch {
            this.problems.note('REST body', `${s.method} ${s.path.slice(0, 120)}: not JSON: ${a.text.slice(0, 200)}`);
          }
        }
      },
      (err: Error) => this.problems.note('REST transport', `${s.method} ${s.path.slice(0, 120)}: ${err.message}`),
    ).finally(() => this.inflight--);
  }

  toJSON(): Record<string, unknown> {
    const routes: Record<string, Record<string, number>> = {};
    for (const [route, statuses] of this.byRoute) routes[route] = Object.fromEntries(statuses);
    return { sent: this.sent, answered: this.answered, fiveXX: this.fiveXX, shed: this.shed, routes };
  }
}

// ---- reference ingest ----

/** Every few seconds, flips `s` (suspended/open) of two markets through `POST /api/v1/ingest`. */
export class StateToggler {
  toggles = 0;
  private timer: NodeJS.Timeout | undefined;
  private busy = false;

  constructor(private readonly http: Http, private readonly markets: OpenMarket[], private readonly problems: Problems) {}

  start(everyMs = 5000): void {
    this.timer = setInterval(() => void this.tick(), everyMs);
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    for (let t = 0; this.busy && t < 10_000; t += 20) await sleep(20);
  }

  private async tick(): Promise<void> {
    if (this.busy) return;
    this.busy = true;
    const ms = pickSome(this.markets, 2);
    try {
      const a = await this.http.request('POST', '/api/v1/ingest', JSON.stringify({ data: ms.map((m) => ({ kind: 'market', mid: m.mid, s: !m.s })) }));
      if (a.status !== 200) this.problems.note('state toggle', `answered ${a.status}: ${a.text.slice(0, 200)}`);
      else {
        for (const m of ms) m.s = !m.s;
        this.toggles += ms.length;
      }
    } catch (err) {
      this.problems.note('state toggle', (err as Error).message);
    } finally {
      this.busy = false;
    }
  }
}

// ---- REST subscribe and unsubscribe ----

/**
 * REST subscribe changes the stored set of the client `public`, which every open socket shares:
 * all of them gain the markets at once. A window subscribes the reserved markets (which no socket
 * holds itself) and one fresh unlisted ID, lets `check` compare the gauge, holds, and unsubscribes.
 */
export class RestSubscriptions {
  windows = 0;
  private n = 0;

  constructor(private readonly http: Http, private readonly reserved: readonly string[], private readonly problems: Problems) {}

  async window(holdMs: number, check: (added: number) => Promise<void>): Promise<void> {
    const ids = [...this.reserved, `soak.r.${++this.n}`];
    const body = JSON.stringify({ data: ids });
    const sub = await this.post('/api/v1/subscribe', body, `Subscribed from market ${ids.join(',')}`);
    try {
      if (sub) await check(ids.length);
      await sleep(holdMs);
    } finally {
      await this.post('/api/v1/unsubscribe', body, `Unsubscribed from market ${ids.join(',')}`);
      this.windows++;
    }
  }

  private async post(path: string, body: string, message: string): Promise<boolean> {
    try {
      const a = await this.http.request('POST', path, body);
      if (a.status === 200 && a.text === JSON.stringify({ status: 1, message })) return true;
      this.problems.note('REST subscription', `${path} answered ${a.status}: ${a.text.slice(0, 200)}`);
    } catch (err) {
      this.problems.note('REST subscription', `${path}: ${(err as Error).message}`);
    }
    return false;
  }
}
