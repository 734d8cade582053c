/**
 * Fuzz of every REST route: generated query strings, bodies, methods, paths and raw TCP garbage
 * against the real in-process service. Deterministic: every generator is seeded from SEED
 * (override with FUZZ_SEED=n to explore; the seed of each subtest is in its name).
 */
import t from 'tap';
import { startTestService } from '../helpers/service.js';
import {
  Gen, Pairs, Raw, anyValue, badMid, corruptText, deep, distinctIds, encodeComponent, goodMid, idQuery, isMarketIdRule, nastyString,
  parsed, queryOracle, queryValue, toJson, type Expect, type IdKind,
} from './gen.js';
import { Failures, afterwards, baseline, inPool, take, notAnError, rawHttp, request, show, type Baseline, type RawOutcome } from './harness.js';

const SEED = Number(process.env.FUZZ_SEED ?? 20260701);
const CONCURRENCY = 8;
const MIB = 1024 * 1024;
/** Request heads up to this size must get an answer; above it uWS may drop the connection. */
const HEAD_LIMIT = 100 * 1024;

const svc = await startTestService(t);
let before: Baseline;

t.before(async () => {
  before = await baseline(t, svc);
});

const send = (req: Buffer, opts?: { timeoutMs?: number; head?: boolean }) => rawHttp(svc.port, req, opts);

interface IdRoute {
  path: string;
  required: { name: string; kind: IdKind };
  optional?: { name: string; kind: IdKind };
}

const ID_ROUTES: IdRoute[] = [
  { path: '/api/v1/sports/events', required: { name: 'si', kind: 'int' }, optional: { name: 'li', kind: 'int' } },
  { path: '/api/v1/events/markets', required: { name: 'eid', kind: 'int' } },
  { path: '/api/v1/markets/result', required: { name: 'mid', kind: 'mid' } },
];

/** A 200 to a valid ID query: JSON of the documented shape, every requested ID answered. */
function notAnAnswer(route: IdRoute, query: string, o: RawOutcome): string | undefined {
  if (!o.reply) return o.timedOut ? 'hang' : 'connection closed without an answer';
  if (o.reply.status !== 200) return `status ${o.reply.status} to a valid query: ${o.reply.body.toString('utf8').slice(0, 160)}`;
  if (o.reply.headers['content-type'] !== 'application/json') return `content-type ${o.reply.headers['content-type']}`;
  const body = parsed(o.reply.body)?.value;
  const ids = distinctIds(queryValue(query, route.required.name)!);
  if (route.required.kind === 'mid') {
    if (!Array.isArray(body) || !body.every((r: { mid?: unknown }) => ids.includes(r.mid as string))) return 'result answer is not a list of requested markets';
    return undefined;
  }
  const data = (body as { data?: Record<string, unknown> } | undefined)?.data;
  if (!data || typeof data !== 'object') return 'answer has no data object';
  const keys = Object.keys(data).sort();
  const want = ids.map((s) => String(Number(s))).sort();
  if (keys.join() !== want.join()) return `answer keys ${keys.join()} are not the requested IDs`;
  if (!Object.values(data).every(Array.isArray)) return 'an ID does not map to an array';
  return undefined;
}

t.test(`ID-list routes: generated query strings (seed ${SEED})`, async (t) => {
  const g = new Gen(SEED);
  const counts: Record<Expect, number> = { ok: 0, error: 0, either: 0 };
  let oversizedHeads = 0;
  for (const route of ID_ROUTES) {
    const f = new Failures();
    const queries = take(250, () => idQuery(g, route.required, route.optional));
    await inPool(queries, CONCURRENCY, async (q) => {
      const expect = queryOracle(q, route.required, route.optional);
      counts[expect]++;
      const target = `${route.path}?${q}`;
      const o = await send(request('GET', target));
      // uWS drops connections whose request head is far over 100 KB (observed: closed, no answer).
      if (target.length > HEAD_LIMIT && !o.reply && !o.timedOut) {
        oversizedHeads++;
        return;
      }
      if (expect === 'error') f.add(target, notAnError(o, [400]));
      else if (expect === 'ok') f.add(target, notAnAnswer(route, q, o));
      else f.add(target, o.reply?.status === 200 ? notAnAnswer(route, q, o) : notAnError(o, [400]));
    });
    f.assert(t, `GET ${route.path}`);
  }
  t.ok(counts.error > counts.ok, `mostly invalid queries (${counts.error} invalid, ${counts.ok} valid, ${counts.either} either)`);
  t.comment(`${oversizedHeads} request heads over ${HEAD_LIMIT} bytes closed by uWS without an answer`);
});

t.test(`ID-list routes: raw bytes a client should have encoded (seed ${SEED + 1})`, async (t) => {
  // Raw control characters, NUL, spaces, non-ASCII bytes, quotes and fragments in the request
  // target. They lead the ID value, so no prefix of the target is a valid query: the answer may
  // be a closed connection, never a success or a 5xx.
  const g = new Gen(SEED + 1);
  const f = new Failures();
  const raws = ['\u0000', '\t', '\u0001', '\u001b', '\u007f', ' ', '"', '<', '>', '\\', '^', '`', '{', '|', '}', '#', '\u00ff', '\u0080'];
  const cases = Array.from({ length: 200 }, () => {
    const route = g.pick(ID_ROUTES);
    let garbage = '';
    for (let i = g.int(1, 6); i > 0; i--) garbage += g.chance(0.7) ? g.pick(raws) : String.fromCharCode(g.int(0x80, 0xff));
    return Buffer.concat([
      Buffer.from(`GET ${route.path}?${route.required.name}=`, 'latin1'),
      g.chance(0.2) ? Buffer.from(garbage + '\u00e9', 'utf8') : Buffer.from(garbage, 'latin1'),
      Buffer.from(`${route.required.kind === 'int' ? '1' : '1.1'} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n`, 'latin1'),
    ]);
  });
  const tally = { answered: 0, closed: 0, waiting: 0 };
  // uWS neither answers nor closes a request line with a raw control character or space: it
  // waits for its idle timeout (about 10 s). That is the HTTP layer, not a hang of the process.
  await inPool(cases, 32, async (c) => {
    const o = await send(c, { timeoutMs: 400 });
    tally[o.reply ? 'answered' : o.closed ? 'closed' : 'waiting']++;
    f.add(show(c), o.reply ? notAnError(o, [400, 404]) : undefined);
  });
  t.comment(`answered ${tally.answered}, closed ${tally.closed}, left open by uWS ${tally.waiting}`);
  t.ok(tally.answered > 0, 'raw bytes that HTTP allows get a JSON error');
  f.assert(t, 'raw garbage in query strings');
});

t.test(`routes without parameters ignore any query string (seed ${SEED + 2})`, async (t) => {
  const g = new Gen(SEED + 2);
  const f = new Failures();
  const expected: Record<string, string> = {
    '/api/v1/sports': before.snap.rest['/api/v1/sports'],
    '/health': JSON.stringify({ message: 'Server is running' }),
    '/ready': JSON.stringify({ message: 'ready' }),
  };
  const paths = [...Object.keys(expected), '/metrics'];
  const cases = Array.from({ length: 240 }, (_, i) => ({ path: i % 12 === 0 ? '/metrics' : g.pick(paths.slice(0, 3)), q: idQuery(g, { name: 'si', kind: 'int' }) }));
  await inPool(cases, CONCURRENCY, async ({ path, q }) => {
    const o = await send(request('GET', `${path}?${q}`));
    let why: string | undefined;
    if (!o.reply) why = o.timedOut ? 'hang' : 'closed';
    // The public port points scrapers to the metrics port, whatever the query.
    else if (path === '/metrics') why = o.reply.status === 404 && o.reply.body.includes('METRICS_PORT') ? undefined : `status ${o.reply.status}, not the pointer to the metrics port`;
    else if (o.reply.status !== 200) why = `status ${o.reply.status}`;
    else why = o.reply.body.toString('utf8') === expected[path] ? undefined : `body ${o.reply.body.toString('utf8').slice(0, 120)}`;
    f.add(`${path}?${q}`, why);
  });
  f.assert(t, 'parameterless routes');
});

const GET_PATHS = ['/api/v1/sports', '/api/v1/sports/events', '/api/v1/events/markets', '/api/v1/markets/result', '/health', '/ready', '/metrics'];
const POST_PATHS = ['/api/v1/subscribe', '/api/v1/unsubscribe', '/api/v1/ingest'];
const KNOWN = new Set([...GET_PATHS, ...POST_PATHS, '/ws', '/ingest']);

t.test(`wrong methods, unknown paths, plain requests to socket routes (seed ${SEED + 3})`, async (t) => {
  const g = new Gen(SEED + 3);
  const f = new Failures();
  const tokens = ['PUT', 'DELETE', 'PATCH', 'OPTIONS', 'TRACE'];
  // uWS drops a request whose method is not one it knows (observed: closed, no answer).
  const unknownMethods = ['PROPFIND', 'BREW', 'FOO', 'GETX', 'XPOST', 'M-SEARCH', 'PURGE', 'LINK', 'get', 'Post'];
  type Case = { method: string; target: string; expected: number[]; mayClose?: boolean };
  const cases: Case[] = [];
  for (const path of GET_PATHS) for (const m of ['POST', ...tokens]) cases.push({ method: m, target: `${path}?si=1`, expected: [405] });
  for (const path of POST_PATHS) for (const m of ['GET', ...tokens]) cases.push({ method: m, target: path, expected: [405] });
  for (const path of [...GET_PATHS, ...POST_PATHS]) for (const m of unknownMethods) cases.push({ method: m, target: path, expected: [405], mayClose: true });
  for (const path of ['/ws', '/ingest']) for (const m of ['GET', 'POST', 'PUT', 'DELETE']) cases.push({ method: m, target: path + g.pick(['', '?hb=1000', '?x']), expected: [400] });
  const segment = () => g.one([
    [3, () => encodeComponent(g, nastyString(g, 12)).replace(/%2F/gi, '') || 'x'],
    [2, () => g.pick(['api', 'v1', 'v2', 'sports', 'events', 'markets', 'result', 'API', 'V1', '..', '.', '', '%2e%2e', '%00', '%2F', ';', 'ws;x'])],
    [1, () => 'a'.repeat(g.int(100, 6000))],
  ]);
  while (cases.length < 600) {
    const path = '/' + Array.from({ length: g.int(1, 6) }, segment).join('/');
    if (KNOWN.has(path)) continue;
    cases.push({ method: g.pick(['GET', 'GET', 'POST', 'DELETE', 'PUT']), target: path + (g.chance(0.3) ? '?si=1' : ''), expected: [404] });
  }
  cases.push(
    { method: 'GET', target: '/API/V1/SPORTS', expected: [404] },
    { method: 'GET', target: '/api/v1/sports/', expected: [404] },
    { method: 'GET', target: '//api/v1/sports', expected: [404] },
    { method: 'GET', target: '/api/v1/sports/events/', expected: [404] },
    { method: 'GET', target: '/api/v1/%73ports', expected: [404] },
    { method: 'POST', target: '/api/v1/subscribe/', expected: [404] },
  );
  let dropped = 0;
  await inPool(cases, CONCURRENCY, async (c) => {
    const body = c.method === 'GET' ? undefined : '{"data":[]}';
    const o = await send(request(c.method, c.target, { body, headers: body ? [['Content-Type', 'application/json']] : [] }));
    if (c.mayClose && o.closed) dropped++;
    else f.add(`${c.method} ${c.target}`, notAnError(o, c.expected));
  });
  t.comment(`${dropped} requests with a method uWS does not know were dropped without an answer`);
  // HEAD answers carry no body: only the status is checked.
  for (const path of [...GET_PATHS, ...POST_PATHS, '/nope']) {
    const o = await send(request('HEAD', path), { head: true });
    const ok = o.reply && o.reply.status < 500;
    f.add(`HEAD ${path}`, ok ? undefined : o.reply ? `status ${o.reply.status}` : o.timedOut ? 'hang' : undefined);
  }
  f.assert(t, 'methods and paths');
});

/** docs/rest.md: 415 unless the media type is application/json (case-insensitive, parameters allowed). */
const isJsonType = (ct: string | undefined) => (ct ?? '').split(';')[0].trim().toLowerCase() === 'application/json';

/** docs/rest.md: `{"data": [...]}` with 1 to 50 market IDs. */
function marketListValid(v: unknown): boolean {
  if (!v || typeof v !== 'object' || Array.isArray(v)) return false;
  const data = (v as { data?: unknown }).data;
  return Array.isArray(data) && data.length >= 1 && data.length <= 50 && data.every(isMarketIdRule);
}

function contentType(g: Gen): string | undefined {
  return g.one([
    [14, () => 'application/json'],
    [2, () => g.pick(['application/json; charset=utf-8', 'APPLICATION/JSON', ' application/json ', 'Application/Json;charset=latin1', 'application/json;;;'])],
    [3, () => g.pick(['text/plain', 'text/json', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x', 'application/jsonx',
      'application/json-patch+json', 'application/ld+json', '', '*/*', 'application/x-protobuf', 'json', 'application/', '; application/json',
      'application/json\t', 'application json', 'application/j%73on'])],
    [1, () => undefined],
    [1, () => nastyString(g, 30).replace(/[^\x21-\x7e ]/g, '') || 'x'],
  ]);
}

/** Bodies for subscribe and unsubscribe, none of them valid. */
function listBody(g: Gen): Buffer {
  const mids = () => Array.from({ length: g.int(1, 8) }, () => goodMid(g));
  const text = g.one<string | Buffer>([
    [2, () => g.bytes(g.size(3000))],
    [1, () => nastyString(g, 200)],
    [3, () => corruptText(g, JSON.stringify({ data: mids() }))],
    [1, () => toJson(deep(g, g.int(10, 200000)))],
    [1, () => `{"data":${toJson(deep(g, g.int(10, 100000)))}}`],
    [2, () => toJson(g.pick<unknown>([[], 'x', 1, null, true, {}, { Data: mids() }, { DATA: mids() }, [{ data: mids() }], { data: { 0: '1.1' } }]))],
    [3, () => toJson({ data: anyValue(g) })],
    [4, () => {
      const list: unknown[] = mids();
      for (let i = g.int(1, 3); i > 0; i--) list.splice(g.int(0, list.length), 0, g.chance(0.5) ? badMid(g) : anyValue(g));
      return toJson({ data: list });
    }],
    // Consecutive IDs from a random one: the list's length is what is wrong, and a random draw per ID costs more than the request.
    [2, () => {
      const first = g.int(200000000, 200009999);
      return toJson({ data: Array.from({ length: g.int(51, 20000) }, (_, i) => `1.${first + i}`) });
    }],
    [1, () => toJson({ data: [] })],
    [1, () => toJson(new Pairs([['data', mids()], ['data', anyValue(g)]]))],
    [1, () => toJson(new Pairs([['__proto__', { data: mids() }], ['constructor', 1], ['data', [badMid(g)]]]))],
    [1, () => toJson({ data: mids().map((m) => new Raw(JSON.stringify(m).replace(/[0-9]/, (d) => `\\u00${(0x30 + Number(d)).toString(16)}`) + ',null'))})],
    [1, () => Buffer.from(JSON.stringify({ data: mids() }), 'utf16le')],
  ]);
  return Buffer.isBuffer(text) ? text : Buffer.from(text, 'utf8');
}

t.test(`subscribe and unsubscribe: generated bodies and content types (seed ${SEED + 4})`, async (t) => {
  const g = new Gen(SEED + 4);
  const f = new Failures();
  let valid415 = 0;
  const cases = take(400, () => {
    const path = g.pick(['/api/v1/subscribe', '/api/v1/unsubscribe']);
    const ct = contentType(g);
    // A valid body under a wrong content type must still be refused, and change nothing.
    const body = !isJsonType(ct) && g.chance(0.3) ? Buffer.from(JSON.stringify({ data: [goodMid(g)] })) : listBody(g);
    const p = parsed(body);
    const expected = !isJsonType(ct) ? 415 : body.length > MIB ? 413 : !p || !marketListValid(p.value) ? 400 : 0;
    if (expected === 0) return undefined; // accidentally valid: it would change the stored market set
    if (expected === 415 && p && marketListValid(p.value)) valid415++;
    return { path, ct, body, expected };
  });
  await inPool(cases, CONCURRENCY, async (c) => {
    const o = await send(request('POST', c.path, { headers: c.ct === undefined ? [] : [['Content-Type', c.ct]], body: c.body }));
    f.add(`POST ${c.path} ct=${show(c.ct)} ${show(c.body.toString('latin1').slice(0, 200))}`, notAnError(o, [c.expected]));
  });
  t.ok(valid415 > 10, `${valid415} valid bodies under a wrong content type`);
  f.assert(t, 'subscribe/unsubscribe bodies');
});

t.test(`bodies over 1 MiB are refused with 413 on every POST route`, async (t) => {
  const f = new Failures();
  const big = Buffer.from(JSON.stringify({ data: ['1.999999999'], pad: 'x'.repeat(MIB + 10) }));
  for (const path of POST_PATHS) {
    const cases: [string, Buffer][] = [
      ['declared and sent', request('POST', path, { headers: [['Content-Type', 'application/json']], body: big })],
      ['declared 999999999, not sent', request('POST', path, { headers: [['Content-Type', 'application/json']], contentLength: 999999999 })],
      ['declared small, sent big', Buffer.concat([request('POST', path, { headers: [['Content-Type', 'application/json']], contentLength: 10 }).subarray(0, -4), Buffer.from('\r\n\r\n'), big])],
      ['chunked', Buffer.concat([
        Buffer.from(`POST ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n`),
        ...Array.from({ length: 20 }, () => Buffer.from(`10000\r\n${'x'.repeat(0x10000)}\r\n`)), Buffer.from('0\r\n\r\n')])],
    ];
    for (const [what, req] of cases) {
      const o = await send(req);
      // "declared small" sends 10 bytes of body, then the rest is a garbage second request.
      f.add(`${path} ${what}`, what === 'declared small, sent big' ? (o.reply && o.reply.status >= 500 ? `status ${o.reply.status}` : undefined) : notAnError(o, [413]));
    }
    // uWS itself drops a request whose Content-Length has 10 digits or more: no answer, no crash.
    const o = await send(request('POST', path, { headers: [['Content-Type', 'application/json']], contentLength: 1e12 }));
    f.add(`${path} declared 10^12`, o.reply ? notAnError(o, [413]) : o.timedOut ? 'hang' : undefined);
  }
  f.assert(t, 'oversized bodies');
});

t.test(`raw TCP garbage: the connection may close, the process stays up (seed ${SEED + 5})`, async (t) => {
  const g = new Gen(SEED + 5);
  const f = new Failures();
  const line = (s: string) => Buffer.from(s, 'latin1');
  const gens: (() => Buffer)[] = [
    () => g.bytes(g.size(5000)),
    () => line(g.pick(['GET', 'GET /', 'GET / HTTP/9.9', 'GET /health HTTP/1.1', 'GET /health HTTP/1.1\r\n', '\r\n\r\n', 'HTTP/1.1 200 OK\r\n\r\n']) + '\r\n\r\n'),
    () => line(`${g.pick(['get', 'G\u0000T', 'GET\t', 'GE T', 'CONNECT', 'PRI'])} ${g.pick(['/health', '*', 'http://x/health', 'x', '', '/api/v1/sports/events?si=1'])} ${g.pick(['HTTP/1.1', 'HTTP/1.0', 'HTTP/2.0', 'HTTPS/1.1', 'http/1.1', ''])}\r\n\r\n`),
    () => line(`GET /api/v1/sports HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: ${'a'.repeat(g.int(10000, 200000))}\r\n\r\n`),
    () => line(`GET /api/v1/sports HTTP/1.1\r\nHost: 127.0.0.1\r\n${Array.from({ length: g.int(100, 3000) }, (_, i) => `X-H${i}: ${i}`).join('\r\n')}\r\n\r\n`),
    () => line(`GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n${g.pick(['NoColon', ': empty-name', ' folded: x', 'X-A: \u0000', 'X\u0000: y', 'X-A: a\rb', 'Content-Length: -1', 'Content-Length: abc',
      'Content-Length: 1\r\nContent-Length: 2', 'Transfer-Encoding: chunked\r\nContent-Length: 5', 'Transfer-Encoding: gzip, chunked', 'Host: y'])}\r\n\r\n`),
    () => line('GET /health HTTP/1.1\nHost: 127.0.0.1\n\n'),
    () => line(`POST /api/v1/unsubscribe HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n${g.pick(['zz', '-1', 'ffffffffffffffff', '3\r\nabcdef', '1;ext\r\n{\r\n0', ''])}\r\n\r\n`),
    () => Buffer.concat([line('GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n'), g.bytes(g.size(2000))]),
    () => line(`GET /${'a/'.repeat(g.int(1000, 20000))} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n`),
    () => Buffer.concat([line(`POST /api/v1/ingest HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: ${g.int(10, 100)}\r\n\r\n`), g.bytes(g.int(0, 5))]),
  ];
  const cases = take(220, () => g.pick(gens)());
  const tally = { answered: 0, closed: 0, waiting: 0 };
  await inPool(cases, 32, async (c) => {
    const o = await send(c, { timeoutMs: 500 });
    tally[o.reply ? 'answered' : o.closed ? 'closed' : 'waiting']++;
    f.add(show(c.subarray(0, 200)), o.reply && o.reply.status >= 500 ? `status ${o.reply.status}: ${o.reply.body.toString().slice(0, 100)}` : undefined);
  });
  t.comment(`answered ${tally.answered}, closed ${tally.closed}, left waiting for more bytes ${tally.waiting}`);
  const h = await send(request('GET', '/health'));
  t.equal(h.reply?.status, 200, '/health still answers');
  f.assert(t, 'TCP garbage');
});

afterwards(t, svc, () => before);
