/**
 * The baseline: what a competent team would build without uWebSockets.js.
 *
 * - REST on node:http: the same routes and the same answers, byte for byte, read from the same
 *   Postgres with one query per request through a pg Pool (named, so prepared once per
 *   connection). The SQL is that of src/refdata/queries.ts, with the filter and order the
 *   service applies in memory moved into SQL.
 * - Odds on the `ws` library: a Map from market ID to its sockets; each update is serialised
 *   once per format into a Buffer and that Buffer is sent to every subscriber. Same frames,
 *   same subprotocols, same ingest socket (`/ingest`, acked per message), same validation
 *   (src/ingest/odds.ts) and encoders (src/odds/codec.ts) as the service, so only the server
 *   differs.
 *
 * Env: DATABASE_URL (required), PORT (0 = free port), HOST (127.0.0.1), PG_POOL_MAX (10).
 */
import http from 'node:http';
import pg from 'pg';
import { WebSocketServer, WebSocket, type RawData } from 'ws';
import { validateOdds } from '../../src/ingest/odds.js';
import { encodeJson, encodeProto } from '../../src/odds/codec.js';
import type { OddsImage } from '../../src/odds/messages.js';
import { newEpoch } from '../../src/odds/book.js';

pg.types.setTypeParser(pg.types.builtins.INT8, (v: string) => Number(v));

const databaseUrl = process.env.DATABASE_URL;
if (!databaseUrl) {
  process.stderr.write('DATABASE_URL is required\n');
  process.exit(2);
}
const pool = new pg.Pool({
  connectionString: databaseUrl,
  max: Number(process.env.PG_POOL_MAX || 10),
  application_name: 'bench-baseline',
  statement_timeout: 5000,
  connectionTimeoutMillis: 2000,
});
pool.on('error', (err) => process.stderr.write(`pg idle client error: ${err.message}\n`));

// ---- REST ----

const JSON_HEADERS = { 'content-type': 'application/json' };

function reply(res: http.ServerResponse, status: number, body: string): void {
  res.writeHead(status, { ...JSON_HEADERS, 'content-length': Buffer.byteLength(body) });
  res.end(body);
}

class BadRequest extends Error {}

const INT = /^[1-9][0-9]{0,15}$/;
const MID = /^[A-Za-z0-9._:-]{1,64}$/;

/** 1 to 50 comma-joined IDs, duplicates collapsed in first-seen order; the service's rules. */
function ids(params: URLSearchParams, name: string, re: RegExp, required: boolean): string[] | undefined {
  const all = params.getAll(name);
  if (all.length === 0) {
    if (required) throw new BadRequest(`${name} is required`);
    return undefined;
  }
  if (all.length > 1) throw new BadRequest(`${name} is given more than once`);
  const parts = all[0].split(',');
  if (parts.length > 50 || parts.some((p) => !re.test(p))) throw new BadRequest(`${name} must list 1 to 50 IDs`);
  return [...new Set(parts)];
}

const SQL = {
  sports: { name: 'sports', text: 'SELECT si, na, a FROM sports ORDER BY si' },
  events: `SELECT e.eid, e.na, l.na AS le, e.st, e.go, e.ip, e.si, e.li, e.tv
             FROM events e JOIN leagues l ON l.li = e.li
            WHERE e.si = ANY($1::bigint[]) AND ($2::bigint[] IS NULL OR e.li = ANY($2::bigint[]))
            ORDER BY e.st, e.eid`,
  markets: `SELECT m.mid, m.eid, m.na, e.si, m.s, m.go, m.ty, m.rt, m.has_if, m.info, m.di, m.bl, m.has_r,
                   (SELECT coalesce(json_agg(json_build_object('rid', r.rid, 'na', r.na) ORDER BY r.pos), '[]')
                      FROM runners r WHERE r.mid = m.mid) AS runners,
                   (SELECT json_agg(json_build_object('mid', n.mid, 's', n.s, 'go', n.go,
                              'r', (SELECT coalesce(json_agg(json_build_object('rid', r.rid, 'na', r.na) ORDER BY r.pos), '[]')
                                      FROM runners r WHERE r.mid = n.mid),
                              'if', n.info) ORDER BY n.pos, n.mid)
                      FROM markets n WHERE n.parent_mid = m.mid) AS nested
              FROM markets m JOIN events e ON e.eid = m.eid
             WHERE m.parent_mid IS NULL AND m.eid = ANY($1::bigint[])
             ORDER BY coalesce(m.di, -1), m.mid COLLATE "C"`,
  results: `SELECT m.mid, coalesce(m.ty, p.ty) AS mt, coalesce(r.res, '') AS res,
                   coalesce(r.rt, false) AS rt, coalesce(r.ia, false) AS ia
              FROM markets m
              LEFT JOIN markets p ON p.mid = m.parent_mid
              LEFT JOIN results r ON r.mid = m.mid
             WHERE m.mid = ANY($1::text[])`,
};

interface EventRow { eid: number; na: string; le: string; st: Date; go: boolean; ip: boolean; si: number; li: number; tv: string | null }
interface MarketRow {
  mid: string; eid: number; na: string; si: number; s: boolean; go: boolean; ty: string; rt: boolean;
  has_if: boolean; info: unknown; di: number | null; bl: number | null; has_r: boolean; runners: unknown[]; nested: unknown[] | null;
}

/** `{"data":{"<id>":[...],...}}` in the order the IDs were asked for (an object would sort numeric keys). */
function keyed(order: string[], groups: Map<string, unknown[]>): string {
  return '{"data":{' + order.map((id) => `"${id}":${JSON.stringify(groups.get(id) ?? [])}`).join(',') + '}}';
}

function group<T>(rows: T[], key: (r: T) => string, value: (r: T) => unknown): Map<string, unknown[]> {
  const out = new Map<string, unknown[]>();
  for (const r of rows) {
    const k = key(r);
    let list = out.get(k);
    if (!list) out.set(k, (list = []));
    list.push(value(r));
  }
  return out;
}

async function route(path: string, params: URLSearchParams): Promise<[number, string]> {
  switch (path) {
    case '/api/v1/sports': {
      const { rows } = await pool.query(SQL.sports);
      return [200, JSON.stringify(rows)];
    }
    case '/api/v1/sports/events': {
      const si = ids(params, 'si', INT, true)!;
      const li = ids(params, 'li', INT, false);
      const { rows } = await pool.query<EventRow>({ name: 'events', text: SQL.events, values: [si, li ?? null] });
      return [200, keyed(si, group(rows, (r) => String(r.si), (r) => ({
        eid: r.eid, na: r.na, le: r.le, st: r.st.toISOString(), go: r.go, ip: r.ip, si: r.si, li: r.li, tv: r.tv,
      })))];
    }
    case '/api/v1/events/markets': {
      const eid = ids(params, 'eid', INT, true)!;
      const { rows } = await pool.query<MarketRow>({ name: 'markets', text: SQL.markets, values: [eid] });
      return [200, keyed(eid, group(rows, (r) => String(r.eid), (r) => {
        const m: Record<string, unknown> = { mid: r.mid, eid: r.eid, na: r.na, si: r.si, s: r.s, go: r.go, ty: r.ty, rt: r.rt };
        if (r.has_if) m.if = r.info;
        if (r.di !== null) m.di = r.di;
        if (r.bl !== null) m.bl = r.bl;
        if (r.has_r) m.r = r.runners;
        if (r.ty === 'player-race') m.m = r.nested ?? [];
        return m;
      }))];
    }
    case '/api/v1/markets/result': {
      const mid = ids(params, 'mid', MID, true)!;
      const { rows } = await pool.query<{ mid: string }>({ name: 'results', text: SQL.results, values: [mid] });
      const byMid = new Map(rows.map((r) => [r.mid, r]));
      return [200, JSON.stringify(mid.map((m) => byMid.get(m)).filter((r) => r !== undefined))];
    }
    default:
      return [404, JSON.stringify({ status: 0, message: `no route for ${path}` })];
  }
}

const HEALTH = JSON.stringify({ message: 'Server is running' });

const server = http.createServer((req, res) => {
  const url = req.url ?? '/';
  const q = url.indexOf('?');
  const path = q < 0 ? url : url.slice(0, q);
  if (path === '/health') return reply(res, 200, HEALTH);
  if (req.method !== 'GET') return reply(res, 405, JSON.stringify({ status: 0, message: `${req.method} is not allowed` }));
  const params = new URLSearchParams(q < 0 ? '' : url.slice(q + 1));
  route(path, params).then(
    ([status, body]) => reply(res, status, body),
    (err: Error) => reply(res, err instanceof BadRequest ? 400 : 503, JSON.stringify({ status: 0, message: err.message })),
  );
});
server.keepAliveTimeout = 65_000;

// ---- odds fan-out ----

type Format = 'json' | 'proto';
interface Subscriber extends WebSocket { format: Format; mids: Set<string> }

/** Subscribers per market: the heart of the baseline. */
const topics = new Map<string, Set<Subscriber>>();
const seqs = new Map<string, number>();
const latest = new Map<string, Latest>();
let knownMarkets = new Set<string>();
/** Above this much queued output a socket's frames are skipped (a slow consumer must not grow the heap). */
const MAX_BUFFERED = 1024 * 1024;
let skipped = 0;

const subscribers = new WebSocketServer({
  noServer: true,
  maxPayload: 256 * 1024,
  handleProtocols: (offered) => (offered.has('odds.v1.proto') ? 'odds.v1.proto' : offered.has('odds.v1.json') ? 'odds.v1.json' : false),
});
const publishers = new WebSocketServer({
  noServer: true,
  maxPayload: 1024 * 1024,
  handleProtocols: (offered) => (offered.has('odds.v1.json') ? 'odds.v1.json' : false),
});

server.on('upgrade', (req, socket, head) => {
  const path = (req.url ?? '').split('?')[0];
  const wss = path === '/ws' ? subscribers : path === '/ingest' ? publishers : undefined;
  if (!wss) return socket.destroy();
  wss.handleUpgrade(req, socket, head, (ws) => wss.emit('connection', ws, req));
});

function sendText(ws: WebSocket, msg: Parameters<typeof encodeJson>[0], format: Format): void {
  if (format === 'json') ws.send(encodeJson(msg));
  else ws.send(encodeProto(msg), { binary: true });
}

subscribers.on('connection', (ws: Subscriber) => {
  ws.format = ws.protocol === 'odds.v1.proto' ? 'proto' : 'json';
  ws.mids = new Set();
  ws.on('message', (data: RawData) => {
    let msg: { op?: unknown; id?: unknown; mids?: unknown };
    try {
      msg = JSON.parse(data.toString());
    } catch {
      return sendText(ws, { op: 'ack', id: 0, status: 0, message: 'malformed JSON' }, ws.format);
    }
    const id = typeof msg.id === 'number' ? msg.id : 0;
    const mids = Array.isArray(msg.mids) ? [...new Set(msg.mids as unknown[])] : [];
    if ((msg.op !== 'subscribe' && msg.op !== 'unsubscribe') || mids.length === 0 || mids.length > 50 || !mids.every((m) => typeof m === 'string' && MID.test(m))) {
      return sendText(ws, { op: 'ack', id, status: 0, message: 'bad request' }, ws.format);
    }
    const list = mids as string[];
    if (msg.op === 'subscribe') {
      sendText(ws, { op: 'ack', id, status: 1, message: `Subscribed from market ${list.join(',')}` }, ws.format);
      for (const mid of list) {
        ws.mids.add(mid);
        let set = topics.get(mid);
        if (!set) topics.set(mid, (set = new Set()));
        set.add(ws);
        const entry = latest.get(mid);
        if (entry) ws.send(entry.frame(ws.format), { binary: ws.format === 'proto' });
      }
    } else {
      for (const mid of list) {
        ws.mids.delete(mid);
        topics.get(mid)?.delete(ws);
      }
      sendText(ws, { op: 'ack', id, status: 1, message: `Unsubscribed from market ${list.join(',')}` }, ws.format);
    }
  });
  ws.on('close', () => {
    for (const mid of ws.mids) {
      const set = topics.get(mid);
      set?.delete(ws);
      if (set?.size === 0) topics.delete(mid);
    }
  });
  ws.on('error', () => undefined);
});

/** The latest image of a market, encoded at most once per format, on first use. */
class Latest {
  private json: Buffer | undefined;
  private proto: Buffer | undefined;
  constructor(readonly msg: Parameters<typeof encodeJson>[0]) {}
  frame(format: Format): Buffer {
    return format === 'json' ? (this.json ??= Buffer.from(encodeJson(this.msg))) : (this.proto ??= Buffer.from(encodeProto(this.msg)));
  }
}

/** Frames carry an epoch as the service's do, so both send the same bytes per update. */
const EPOCH = newEpoch('m');

function publish(image: OddsImage): void {
  const seq = (seqs.get(image.mid) ?? 0) + 1;
  seqs.set(image.mid, seq);
  const entry = new Latest({ op: 'odds', mid: image.mid, epoch: EPOCH, seq, ts: image.ts, pt: Date.now(), st: image.st, ip: image.ip, con: false, cf: false, r: image.r });
  latest.set(image.mid, entry);
  const set = topics.get(image.mid);
  if (!set) return;
  for (const ws of set) {
    if (ws.readyState !== WebSocket.OPEN) continue;
    if (ws.bufferedAmount > MAX_BUFFERED) {
      skipped++;
      continue;
    }
    ws.send(entry.frame(ws.format), { binary: ws.format === 'proto' });
  }
}

publishers.on('connection', (ws) => {
  ws.on('message', (data: RawData) => {
    let body: { id?: unknown; data?: unknown };
    try {
      body = JSON.parse(data.toString());
    } catch {
      return ws.send(JSON.stringify({ op: 'ack', id: 0, status: 0, message: 'malformed JSON' }));
    }
    const id = typeof body.id === 'number' ? body.id : 0;
    const items = Array.isArray(body.data) ? body.data : [];
    const images: OddsImage[] = [];
    for (const [i, item] of items.entries()) {
      const checked = item && typeof item === 'object' && item.kind === 'odds' ? validateOdds(item) : { error: 'only odds items are taken here' };
      if ('error' in checked) return ws.send(JSON.stringify({ op: 'ack', id, status: 0, message: `item ${i}: ${checked.error}` }));
      if (!knownMarkets.has(checked.image.mid)) return ws.send(JSON.stringify({ op: 'ack', id, status: 0, message: `item ${i}: market ${checked.image.mid} is not known` }));
      images.push(checked.image);
    }
    for (const image of images) publish(image);
    ws.send(JSON.stringify({ op: 'ack', id, status: 1, message: `Ingested ${items.length} item${items.length === 1 ? '' : 's'}` }));
  });
  ws.on('error', () => undefined);
});

// ---- start ----

async function main(): Promise<void> {
  const { rows } = await pool.query<{ mid: string }>('SELECT mid FROM markets');
  knownMarkets = new Set(rows.map((r) => r.mid));
  const host = process.env.HOST || '127.0.0.1';
  server.listen(Number(process.env.PORT || 0), host, () => {
    const { port } = server.address() as { port: number };
    process.stdout.write(`baseline listening on http://${host}:${port}\n`);
  });
}

const stop = () => {
  if (skipped) process.stderr.write(`baseline skipped ${skipped} frames to slow sockets\n`);
  for (const ws of subscribers.clients) ws.terminate();
  for (const ws of publishers.clients) ws.terminate();
  server.close();
  void pool.end().finally(() => process.exit(0));
};
process.on('SIGTERM', stop);
process.on('SIGINT', stop);

main().catch((err: Error) => {
  process.stderr.write(`baseline failed to start: ${err.message}\n`);
  process.exit(1);
});
