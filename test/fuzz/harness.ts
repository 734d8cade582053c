/**
 * What every fuzz file needs around its generators: a raw HTTP client (exact bytes on the wire,
 * so nothing is normalised on the way), a bounded-concurrency runner, the check that an answer
 * is a well-formed error, and the "afterwards" checks: alive, memory bounded, no data changed,
 * no 5xx in the metrics.
 */
import type { Test } from 'tap';
import { connect } from 'node:net';
import type pg from 'pg';
import WebSocket from 'ws';
import { decodeServerJson, decodeServerProto } from '../../src/odds/codec.js';
import type { ServerMessage } from '../../src/odds/messages.js';
import { http, type TestService } from '../helpers/service.js';
import { sqlClient } from '../helpers/db.js';
import { scrape, value, type Scrape } from '../helpers/metrics.js';
import { waitFor } from '../helpers/wait.js';
import { collect } from '../helpers/gc.js';

// ---- raw HTTP ----

export interface RawReply {
  status: number;
  /** Header names lower-cased. */
  headers: Record<string, string>;
  body: Buffer;
}

export interface RawOutcome {
  reply?: RawReply;
  /** The server closed (or reset) the connection without a complete answer. */
  closed: boolean;
  /** Neither an answer nor a close within the time limit. */
  timedOut: boolean;
}

/** Sends exact bytes on a fresh connection and reads one answer. */
export function rawHttp(port: number, request: Buffer | string, opts: { timeoutMs?: number; head?: boolean } = {}): Promise<RawOutcome> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let done = false;
    const s = connect(port, '127.0.0.1');
    const finish = (o: RawOutcome) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      s.destroy();
      resolve(o);
    };
    const tryParse = (final: boolean): void => {
      const buf = Buffer.concat(chunks);
      const end = buf.indexOf('\r\n\r\n');
      if (end < 0) {
        if (final) finish({ closed: true, timedOut: false });
        return;
      }
      const lines = buf.subarray(0, end).toString('latin1').split('\r\n');
      const m = /^HTTP\/1\.[01] (\d{3})/.exec(lines[0]);
      const headers: Record<string, string> = {};
      for (const l of lines.slice(1)) {
        const c = l.indexOf(':');
        if (c > 0) headers[l.slice(0, c).trim().toLowerCase()] = l.slice(c + 1).trim();
      }
      const status = m ? Number(m[1]) : 0;
      const body = buf.subarray(end + 4);
      const length = headers['content-length'] === undefined ? undefined : Number(headers['content-length']);
      // 101: the connection now speaks WebSocket, no body follows.
      if (opts.head || status === 101 || (length !== undefined && body.length >= length)) {
        finish({ reply: { status, headers, body: length === undefined ? body : body.subarray(0, length) }, closed: false, timedOut: false });
      } else if (final) {
        finish(length === undefined ? { reply: { status, headers, body }, closed: false, timedOut: false } : { closed: true, timedOut: false });
      }
    };
    s.on('data', (d: Buffer) => {
      chunks.push(d);
      tryParse(false);
    });
    s.on('end', () => tryParse(true));
    s.on('close', () => tryParse(true));
    // A server that answers early (413) and closes makes our write fail: the answer still counts.
    s.on('error', () => tryParse(true));
    const timer = setTimeout(() => finish({ closed: false, timedOut: true }), opts.timeoutMs ?? 5000);
    s.write(request);
  });
}

/** One HTTP/1.1 request as bytes. `target` and header values go on the wire exactly as given. */
export function request(method: string, target: string, opts: { headers?: [string, string][]; body?: Buffer | string; contentLength?: number } = {}): Buffer {
  const body = opts.body === undefined ? undefined : Buffer.isBuffer(opts.body) ? opts.body : Buffer.from(opts.body, 'utf8');
  const lines = [`${method} ${target} HTTP/1.1`, 'Host: 127.0.0.1', 'Connection: close'];
  for (const [k, v] of opts.headers ?? []) lines.push(`${k}: ${v}`);
  if (body !== undefined || opts.contentLength !== undefined) lines.push(`Content-Length: ${opts.contentLength ?? body!.length}`);
  return Buffer.concat([Buffer.from(lines.join('\r\n') + '\r\n\r\n', 'latin1'), body ?? Buffer.alloc(0)]);
}

// ---- checks ----

export const ERROR_STATUSES = [400, 404, 405, 413, 415];

/**
 * Why an answer is not the well-formed error docs/rest.md promises, or undefined when it is:
 * a 4xx of the expected kind, `content-type: application/json`, and exactly
 * `{"status":0,"message":<non-empty string>}`; 405s carry `Allow`.
 */
export function notAnError(o: RawOutcome, expected: readonly number[] = ERROR_STATUSES): string | undefined {
  if (o.timedOut) return 'no answer and no close within the time limit (hang)';
  if (!o.reply) return 'connection closed without an answer';
  const { status, headers, body } = o.reply;
  if (!expected.includes(status)) return `status ${status}, expected ${expected.join('/')}: ${body.toString('utf8').slice(0, 160)}`;
  if (headers['content-type'] !== 'application/json') return `content-type ${headers['content-type']}`;
  let parsed: unknown;
  try {
    parsed = JSON.parse(body.toString('utf8'));
  } catch {
    return `body is not JSON: ${body.toString('utf8').slice(0, 160)}`;
  }
  const p = parsed as { status?: unknown; message?: unknown };
  if (!p || typeof p !== 'object' || Object.keys(p).join() !== 'status,message') return `body keys ${Object.keys(p ?? {}).join()}`;
  if (p.status !== 0) return `body status ${String(p.status)}`;
  if (typeof p.message !== 'string' || p.message.length === 0) return 'empty message';
  if (status === 405 && !headers['allow']) return '405 without Allow';
  return undefined;
}

/** Collects failures and reports them as one assertion, with the first few inputs. */
export class Failures {
  readonly list: string[] = [];
  count = 0;

  add(input: string, why: string | undefined): void {
    this.count++;
    if (why !== undefined) this.list.push(`${why} <- ${input.length > 300 ? input.slice(0, 300) + `... (${input.length} chars)` : input}`);
  }

  assert(t: Test, what: string): void {
    t.same(this.list.slice(0, 8), [], `${what}: ${this.list.length} of ${this.count} inputs misanswered`);
    // Every distinct problem, not only the first inputs: failures grouped by what was wrong.
    const by = new Map<string, number>();
    for (const l of this.list) {
      const why = l.split(' <- ')[0].replace(/\d+/g, 'N').slice(0, 100);
      by.set(why, (by.get(why) ?? 0) + 1);
    }
    for (const [why, n] of by) t.comment(`${what}: ${n} x ${why}`);
  }
}

/** JSON.stringify that shows control characters and lone surrogates, for failure messages. */
export const show = (v: unknown): string => JSON.stringify(typeof v === 'string' ? v : Buffer.isBuffer(v) ? v.toString('latin1') : v) ?? String(v);

/** `n` items made on demand, so only the ones in flight are held in memory. */
export function* take<T>(n: number, make: () => T | undefined): Generator<T> {
  for (let i = 0; i < n; ) {
    const item = make();
    if (item === undefined) continue;
    i++;
    yield item;
  }
}

/**
 * Runs `fn` over the items, `limit` at a time. Items are made synchronously one after another,
 * so a seeded generator yields the same sequence whatever order the answers come back in.
 */
export async function inPool<T>(items: Iterable<T>, limit: number, fn: (item: T) => Promise<void>): Promise<void> {
  const it = items[Symbol.iterator]();
  const worker = async () => {
    for (let next = it.next(); !next.done; next = it.next()) await fn(next.value);
  };
  await Promise.all(Array.from({ length: limit }, worker));
}

// ---- afterwards ----

const TABLES = ['sports', 'leagues', 'events', 'markets', 'runners', 'results', 'clients', 'client_markets'];

export interface Snapshot {
  rest: Record<string, string>;
  tables: Record<string, { n: number; digest: string | null }>;
  book: { size: number; seqs: Record<string, number> };
}

const chunks = <T>(xs: T[], n: number): T[][] => Array.from({ length: Math.ceil(xs.length / n) }, (_, i) => xs.slice(i * n, i * n + n));

/** Every REST answer (sports, events of all sports, markets of all events, results of all markets), every table, the book. */
export async function snapshot(svc: TestService, db: pg.Client): Promise<Snapshot> {
  const rest: Record<string, string> = {};
  const get = async (path: string) => {
    const r = await http<unknown>(svc.url, path);
    if (r.status !== 200) throw new Error(`${path} answered ${r.status}`);
    rest[path] = r.text;
    return r.body;
  };
  const sports = (await get('/api/v1/sports')) as { si: number }[];
  const eids: number[] = [];
  for (const c of chunks(sports.map((s) => s.si), 50)) {
    const r = (await get(`/api/v1/sports/events?si=${c.join(',')}`)) as { data: Record<string, { eid: number }[]> };
    for (const list of Object.values(r.data)) for (const e of list) eids.push(e.eid);
  }
  const mids: string[] = [];
  for (const c of chunks(eids, 50)) {
    const r = (await get(`/api/v1/events/markets?eid=${c.join(',')}`)) as { data: Record<string, { mid: string; m?: { mid: string }[] }[]> };
    for (const list of Object.values(r.data)) for (const m of list) mids.push(m.mid, ...(m.m ?? []).map((n) => n.mid));
  }
  for (const c of chunks(mids, 50)) await get(`/api/v1/markets/result?mid=${c.join(',')}`);
  const tables: Snapshot['tables'] = {};
  for (const name of TABLES) {
    const r = await db.query(`SELECT count(*)::int AS n, md5(string_agg(t::text, '|' ORDER BY t::text)) AS digest FROM ${name} t`);
    tables[name] = r.rows[0];
  }
  const seqs: Record<string, number> = {};
  for (const mid of mids) {
    const e = svc.book.get(mid);
    if (e) seqs[mid] = e.seq;
  }
  return { rest, tables, book: { size: svc.book.size, seqs } };
}

/** IDs of the demo data, for generators that aim at real rows. */
export function knownIds(s: Snapshot): { sis: number[]; lis: number[]; eids: number[]; mids: string[] } {
  const sis = (JSON.parse(s.rest['/api/v1/sports']) as { si: number }[]).map((x) => x.si);
  const lis = new Set<number>();
  const eids: number[] = [];
  const mids: string[] = [];
  for (const [path, text] of Object.entries(s.rest)) {
    if (path.startsWith('/api/v1/sports/events')) {
      for (const list of Object.values((JSON.parse(text) as { data: Record<string, { eid: number; li: number }[]> }).data)) {
        for (const e of list) {
          eids.push(e.eid);
          lis.add(e.li);
        }
      }
    } else if (path.startsWith('/api/v1/events/markets')) {
      for (const list of Object.values((JSON.parse(text) as { data: Record<string, { mid: string; m?: { mid: string }[] }[]> }).data)) {
        for (const m of list) mids.push(m.mid, ...(m.m ?? []).map((n) => n.mid));
      }
    }
  }
  return { sis, lis: [...lis], eids, mids };
}

const settle = collect;

/** No query in the service's pool: every connection idle, none awaited. */
const poolIdle = (m: Scrape): boolean =>
  value(m, 'odds_pg_pool_connections', 'state="idle"') === value(m, 'odds_pg_pool_connections', 'state="total"') && value(m, 'odds_pg_pool_connections', 'state="waiting"') === 0;

export const rssMb = (): number => process.memoryUsage().rss / (1024 * 1024);

export interface Baseline {
  snap: Snapshot;
  rss: number;
  db: pg.Client;
}

/** Taken before any fuzzing: the data as it is and the memory the process holds. */
export async function baseline(t: Test, svc: TestService): Promise<Baseline> {
  const db = await sqlClient(t, svc.databaseUrl);
  const snap = await snapshot(svc, db);
  await settle();
  return { snap, rss: rssMb(), db };
}

/**
 * RSS growth allowed over a whole fuzz file. Seen on the shared 2-core machine: about 50 MB (http),
 * 80 MB (ingest) and 10 MB (ws), mostly pages V8 and the allocator keep after a collection; a
 * busy machine slows the fuzzing but does not make it hold more. About twice the largest, so this
 * catches a runaway (a leak per request over thousands of requests), not a few MB.
 */
export const RSS_GROWTH_MB = 150;

/** Alive, memory bounded, nothing changed, no 5xx counted: one subtest each. */
export function afterwards(t: Test, svc: TestService, before: () => Baseline): void {
  t.test('afterwards: the process is alive and ready', async (t) => {
    const h = await http<{ message: string }>(svc.url, '/health');
    t.equal(h.status, 200);
    t.same(h.body, { message: 'Server is running' });
    t.equal((await http(svc.url, '/ready')).status, 200);
  });

  t.test(`afterwards: memory growth stays under ${RSS_GROWTH_MB} MB`, async (t) => {
    await settle();
    const grown = rssMb() - before().rss;
    t.ok(grown < RSS_GROWTH_MB, `RSS grew ${grown.toFixed(1)} MB (from ${before().rss.toFixed(1)} MB)`);
  });

  t.test('afterwards: no data changed (REST answers, every table, the odds book)', async (t) => {
    // Once the pool holds no query, every write the fuzzing caused has committed or failed: a stray one shows in the tables.
    await waitFor(async () => poolIdle(await scrape(svc.url)), 'the service\'s pool idle, no write still under way', 10000);
    const now = await snapshot(svc, before().db);
    t.same(now.tables, before().snap.tables, 'row counts and contents of every table');
    t.same(now.book, before().snap.book, 'odds book');
    const changed = Object.keys(before().snap.rest).filter((k) => now.rest[k] !== before().snap.rest[k]);
    t.same(changed, [], 'every REST answer byte for byte');
    t.same(Object.keys(now.rest).sort(), Object.keys(before().snap.rest).sort(), 'the same set of sports, events and markets');
  });

  t.test('afterwards: the metrics count no 5xx answer', async (t) => {
    const s = await scrape(svc.url);
    t.equal(value(s, 'odds_http_requests_total', 'status="500"'), 0, 'odds_http_requests_total{status="500"}');
    const fives = [...s].filter(([k, v]) => k.startsWith('odds_http_requests_total{') && /status="5\d\d"/.test(k) && v > 0);
    t.same(fives.map(([k, v]) => `${k} ${v}`), [], 'no series with a 5xx status');
  });
}

// ---- sockets ----

export interface Frame {
  data: Buffer;
  binary: boolean;
}

/** A WebSocket client that queues every frame, so a test can read answers in order. */
export class Sock {
  private readonly frames: Frame[] = [];
  private waiters: (() => void)[] = [];
  closed: { code: number; reason: string } | undefined;

  private constructor(readonly ws: WebSocket) {
    ws.on('message', (data: Buffer, binary: boolean) => {
      this.frames.push({ data, binary });
      this.wake();
    });
    ws.on('close', (code: number, reason: Buffer) => {
      this.closed = { code, reason: reason.toString() };
      this.wake();
    });
    // A socket the server drops mid-send reports an error before its close: the close is what counts.
    ws.on('error', () => undefined);
  }

  static open(base: string, path: string, protocols: string[] = []): Promise<Sock> {
    const ws = new WebSocket(base.replace(/^http/, 'ws') + path, protocols, { maxPayload: 64 * 1024 * 1024 });
    return new Promise((resolve, reject) => {
      ws.once('open', () => resolve(new Sock(ws)));
      ws.once('error', reject);
      ws.once('unexpected-response', (_req, res) => reject(new Error(`upgrade refused: ${res.statusCode}`)));
    });
  }

  private wake(): void {
    for (const w of this.waiters.splice(0)) w();
  }

  send(data: Buffer | string, binary: boolean): void {
    this.ws.send(data, { binary });
  }

  /** The next frame, or undefined when the socket closed or nothing came within `ms`. */
  async next(ms = 5000): Promise<Frame | undefined> {
    const end = Date.now() + ms;
    while (!this.frames.length) {
      const left = end - Date.now();
      if (this.closed || left <= 0) return undefined;
      await new Promise<void>((ok) => {
        const timer = setTimeout(ok, left);
        this.waiters.push(() => {
          clearTimeout(timer);
          ok();
        });
      });
    }
    return this.frames.shift();
  }

  /** Waits for the close, up to `ms`. */
  async whenClosed(ms = 5000): Promise<{ code: number; reason: string } | undefined> {
    const end = Date.now() + ms;
    while (!this.closed && Date.now() < end) {
      await new Promise<void>((ok) => {
        const timer = setTimeout(ok, end - Date.now());
        this.waiters.push(() => {
          clearTimeout(timer);
          ok();
        });
      });
    }
    return this.closed;
  }

  close(): void {
    this.ws.close();
  }
}

/** A server frame as the JSON shape, or why it is not a well-formed server message. */
export function decodeFrame(f: Frame): ServerMessage | string {
  try {
    return f.binary ? decodeServerProto(new Uint8Array(f.data)) : decodeServerJson(f.data.toString('utf8'));
  } catch (e) {
    return `malformed server frame (${(e as Error).message}): ${f.data.toString(f.binary ? 'hex' : 'utf8').slice(0, 120)}`;
  }
}

/** The next frame that is not a heartbeat or feed status (those come whenever they are due). */
export async function nextAnswer(sock: Sock, ms = 5000): Promise<Frame | undefined> {
  for (;;) {
    const f = await sock.next(ms);
    if (!f) return undefined;
    const m = decodeFrame(f);
    if (typeof m === 'string' || (m.op !== 'hb' && m.op !== 'clock' && m.op !== 'feed')) return f;
  }
}

/** Why a frame is not a refusal ack `{op:"ack", id, status:0, message}` for this request, or undefined. */
export function notARefusal(f: Frame | undefined, expectedId: number | undefined, binaryExpected: boolean): string | undefined {
  if (!f) return 'no ack (socket closed or silent)';
  if (f.binary !== binaryExpected) return `ack in the wrong frame type (binary ${f.binary})`;
  const m = decodeFrame(f);
  if (typeof m === 'string') return m;
  if (m.op !== 'ack') return `expected an ack, got ${JSON.stringify(m).slice(0, 160)}`;
  if (m.status !== 0) return `status ${m.status}: ${m.message}`;
  if (typeof m.message !== 'string' || !m.message) return 'empty message';
  if (/internal error/i.test(m.message)) return `internal error: ${m.message}`;
  if (expectedId !== undefined && m.id !== expectedId) return `ack id ${m.id}, expected ${expectedId} (${m.message})`;
  return undefined;
}
