/**
 * Fuzz of the publishers' paths, `POST /api/v1/ingest` (JSON and protobuf) and the `/ingest`
 * socket: random and malformed batches, wrong types in every field of every item kind, values of
 * the right type that Postgres cannot store. Every structured batch ends with SENTINEL, an item
 * that passes validation and is refused inside the transaction, so even an item the generator
 * failed to break can change nothing. Seeded from SEED (FUZZ_SEED=n to explore).
 */
import t from 'tap';
import { decodeIngestProto, encodeIngestProto } from '../../src/odds/ingest-codec.js';
import { INGEST_KINDS } from '../../src/odds/messages.js';
import { startTestService } from '../helpers/service.js';
import {
  Gen, Pairs, Raw, SENTINEL, anyValue, corruptText, cutOrExtend, deep, ingestTemplate, mayBeValidItem, mutateItem, troubleItem,
  nastyString, parsed, pbField, randomFields, toJson, ackIdOf, type Known,
} from './gen.js';
import {
  Failures, Sock, afterwards, baseline, inPool, take, knownIds, notAnError, notARefusal, rawHttp, request, show, type Baseline,
} from './harness.js';

const SEED = Number(process.env.FUZZ_SEED ?? 20260701) + 100;
const CONCURRENCY = 8;
const MIB = 1024 * 1024;
const MAX_ITEMS = 5000;

const svc = await startTestService(t);
let before: Baseline;
let known: Known;

t.before(async () => {
  before = await baseline(t, svc);
  known = knownIds(before.snap);
});

type Obj = Record<string, unknown>;

/** A batch of broken items (and now and then an intact one), always closed by SENTINEL. */
function structuredBatch(g: Gen): unknown[] {
  const items: unknown[] = [];
  for (let n = g.int(1, 4); n > 0; n--) {
    const item = ingestTemplate(g, known);
    items.push(g.chance(0.85) ? mutateItem(g, item) : item);
  }
  items.push(SENTINEL);
  return items;
}

interface JsonCase {
  body: Buffer;
  /** What docs/ingest.md says the answer must be. */
  expected: number;
}

/** JSON bodies: garbage, wrong shapes, and structured batches with the sentinel. */
function jsonBody(g: Gen): Buffer {
  const withId = (data: unknown) => (g.chance(0.2) ? new Pairs([['id', anyValue(g)], ['data', data]]) : { data });
  const text = g.one<string | Buffer>([
    [2, () => g.bytes(g.size(3000))],
    [1, () => nastyString(g, 200)],
    [4, () => corruptText(g, toJson({ data: structuredBatch(g) }))],
    [1, () => toJson(deep(g, g.int(10, 200000)))],
    [1, () => `{"data":${toJson(deep(g, g.int(10, 100000)))}}`],
    [1, () => `{"data":[${toJson(deep(g, g.int(10, 100000)))}]}`],
    [2, () => toJson(g.pick<unknown>([[], 'x', 1, null, true, {}, { Data: [SENTINEL] }, [{ data: [SENTINEL] }], { data: { 0: SENTINEL } }, { data: [] }]))],
    [2, () => toJson(withId(anyValue(g)))],
    [2, () => toJson(withId(Array.from({ length: g.int(1, 6) }, () => anyValue(g))))],
    [1, () => toJson({ data: Array.from({ length: g.int(MAX_ITEMS + 1, 30000) }, () => g.pick<unknown>([{}, 1, null, SENTINEL])) })],
    [1, () => toJson({ data: [...Array.from({ length: g.int(100, 3000) }, () => ingestTemplate(g, known)).filter((i) => i.kind === 'odds'), anyValue(g), SENTINEL] })],
    [1, () => toJson(new Pairs([['data', structuredBatch(g)], ['data', anyValue(g)]]))],
    [12, () => toJson(withId(structuredBatch(g)))],
    [10, () => toJson(withId([troubleItem(g, known), SENTINEL]))],
    [1, () => Buffer.from(toJson({ data: structuredBatch(g) }), 'utf16le')],
  ]);
  return Buffer.isBuffer(text) ? text : Buffer.from(text, 'utf8');
}

/**
 * docs/ingest.md: 413 over MAX_BODY_BYTES; 400 for anything that is not `{"data": [0 to 5000 items]}` or holds a bad
 * reference item (an empty batch is a heartbeat, and a bad odds or stale item is refused alone, in a 200).
 */
function jsonExpected(body: Buffer): number | 'skip' {
  if (body.length > MIB) return 413;
  const p = parsed(body);
  if (!p) return 400;
  const v = p.value as { data?: unknown } | null;
  if (!v || typeof v !== 'object' || Array.isArray(v) || !Array.isArray(v.data)) return 400;
  const data = v.data as unknown[];
  if (data.length > MAX_ITEMS) return 400;
  if (data.length === 0) return 'skip';
  if (!data.every(mayBeValidItem)) return 400;
  // Every item could be valid: only a batch closed by the sentinel is sure to change nothing.
  return (data[data.length - 1] as Obj).mid === SENTINEL.mid && (data[data.length - 1] as Obj).kind === 'result' ? 400 : 'skip';
}

/**
 * Whether a protobuf body is sure to be refused: it does not decode, or holds a reference item (random bytes may decode
 * to an empty batch, a heartbeat, or to odds, stale and suspend items alone, each refused by itself in a 200).
 */
function protoRefused(body: Buffer): boolean {
  const decoded = decodeIngestProto(body, MAX_ITEMS);
  return 'error' in decoded || decoded.data.some((item) => item.kind !== 'odds' && item.kind !== 'stale' && item.kind !== 'suspend');
}

/** Items protobufjs can encode: the codec refuses unknown kinds and odds statuses. */
function encodable(items: unknown[]): Uint8Array | undefined {
  try {
    return encodeIngestProto(items as Obj[]);
  } catch {
    return undefined;
  }
}

/** Protobuf bodies: random bytes, cut or extended valid batches, fields of random wire types, troublesome values. */
function protoBody(g: Gen): Buffer {
  const sentinel = Buffer.from(encodeIngestProto([SENTINEL]));
  return g.one<Buffer>([
    [2, () => g.bytes(g.size(2000))],
    // The sentinel leads, so any cut or extension that still decodes starts with it.
    [3, () => cutOrExtend(g, Buffer.concat([sentinel, Buffer.from(encodable(structuredBatch(g).slice(0, -1).filter(mayBeValidItem)) ?? [])]))],
    [3, () => Buffer.concat([
      ...Array.from({ length: g.int(1, 3) }, () => pbField(1, 2, g.chance(0.9) ? pbField(g.int(1, 7), 2, randomFields(g, 15)) : pbField(g.int(1, 7), 0, g.int(0, 1000)))),
      sentinel,
    ])],
    [3, () => {
      for (let tries = 0; tries < 20; tries++) {
        const bytes = encodable(structuredBatch(g));
        if (bytes) return Buffer.from(bytes);
      }
      return Buffer.concat([g.bytes(10), sentinel]);
    }],
    [1, () => Buffer.concat([randomFields(g, 3), sentinel])],
    [3, () => Buffer.concat([Buffer.from(encodable([troubleItem(g, known)]) ?? []), sentinel])],
  ]);
}

t.test(`POST /api/v1/ingest: generated JSON batches (seed ${SEED})`, async (t) => {
  const g = new Gen(SEED);
  const f = new Failures();
  let skipped = 0;
  const cases = take<JsonCase>(300, () => {
    const body = jsonBody(g);
    const expected = jsonExpected(body);
    if (expected !== 'skip') return { body, expected };
    skipped++;
    return undefined;
  });
  await inPool(cases, CONCURRENCY, async (c) => {
    const o = await rawHttp(svc.port, request('POST', '/api/v1/ingest', { headers: [['Content-Type', 'application/json']], body: c.body }), { timeoutMs: 15000 });
    f.add(show(c.body.toString('utf8').slice(0, 400)), notAnError(o, [c.expected]));
  });
  t.comment(`${skipped} generated batches skipped: not sure to be refused`);
  f.assert(t, 'JSON ingest');
});

t.test(`POST /api/v1/ingest: generated protobuf batches (seed ${SEED + 1})`, async (t) => {
  const g = new Gen(SEED + 1);
  const f = new Failures();
  const bodies = take(200, () => {
    const body = protoBody(g);
    return protoRefused(body) ? body : undefined;
  });
  await inPool(bodies, CONCURRENCY, async (body) => {
    const o = await rawHttp(svc.port, request('POST', '/api/v1/ingest', { headers: [['Content-Type', 'application/x-protobuf']], body }), { timeoutMs: 15000 });
    f.add(body.toString('hex').slice(0, 400), notAnError(o, [400]));
  });
  f.assert(t, 'protobuf ingest');
});

t.test(`POST /api/v1/ingest: content types and sizes (seed ${SEED + 2})`, async (t) => {
  const g = new Gen(SEED + 2);
  const f = new Failures();
  const valid = toJson({ data: [{ kind: 'sport', si: 9999, na: 'Never written' }] });
  const cases: { ct: string | undefined; body: Buffer; expected: number }[] = [];
  for (const ct of [undefined, '', 'text/plain', 'application/jsonx', 'application/protobuf', 'application/x-protobufx', 'multipart/form-data',
    'application/octet-stream', 'application/x-www-form-urlencoded', 'text/json', '*/*', 'application/grpc']) {
    cases.push({ ct, body: Buffer.from(valid), expected: 415 });
    cases.push({ ct, body: Buffer.from(encodeIngestProto([{ kind: 'sport', si: 9999, na: 'Never written' }])), expected: 415 });
  }
  // JSON sent as protobuf and protobuf sent as JSON: each decoder gets the other's bytes.
  for (let i = 0; i < 30; i++) {
    cases.push({ ct: 'application/x-protobuf', body: Buffer.from(toJson({ data: structuredBatch(g) })), expected: 400 });
    cases.push({ ct: 'application/json', body: Buffer.from(encodable(structuredBatch(g)) ?? [1]), expected: 400 });
  }
  cases.push({ ct: 'application/json', body: Buffer.from(toJson({ data: [SENTINEL], pad: 'x'.repeat(MIB) })), expected: 413 });
  cases.push({ ct: 'application/x-protobuf', body: Buffer.concat([Buffer.from(encodeIngestProto([SENTINEL])), pbField(99, 2, Buffer.alloc(MIB))]), expected: 413 });
  await inPool(cases, CONCURRENCY, async (c) => {
    const o = await rawHttp(svc.port, request('POST', '/api/v1/ingest', { headers: c.ct === undefined ? [] : [['Content-Type', c.ct]], body: c.body }));
    f.add(`ct=${show(c.ct)} ${c.body.toString('latin1').slice(0, 200)}`, notAnError(o, [c.expected]));
  });
  f.assert(t, 'ingest content types');
});

t.test(`/ingest socket: generated batches in both subprotocols get status 0 acks (seed ${SEED + 3})`, async (t) => {
  const g = new Gen(SEED + 3);
  const f = new Failures();
  const socks = await Promise.all([['odds.v1.json'], ['odds.v1.proto'], [], ['odds.v1.proto', 'odds.v1.json']].map((p) => Sock.open(svc.url, '/ingest', p)));
  t.teardown(() => socks.forEach((s) => s.close()));
  let sent = 0;
  await Promise.all(socks.map(async (sock, k) => {
    const proto = sock.ws.protocol === 'odds.v1.proto';
    for (let i = 0; i < 60; i++) {
      let msg: Buffer;
      let binary: boolean;
      let id: number | undefined;
      if (g.chance(0.5)) {
        const body = jsonBody(g);
        const expected = jsonExpected(body);
        // A text frame must be UTF-8, and the socket takes up to MAX_BODY_BYTES: those cases have their own subtest.
        if (expected !== 400 || !isUtf8(body)) continue;
        msg = body;
        binary = false;
        const p = parsed(body);
        id = p ? ackIdOf(p.value) : 0;
      } else {
        msg = protoBody(g);
        if (!protoRefused(msg)) continue;
        binary = true;
        // Random bytes may carry IngestBatch.id (field 2): the ack echoes it whenever the message decodes.
        id = decodeIngestProto(msg, MAX_ITEMS).id ?? 0;
      }
      sock.send(msg, binary);
      sent++;
      const ack = await sock.next(15000);
      f.add(`socket ${k} ${binary ? msg.toString('hex') : show(msg.toString('utf8'))}`.slice(0, 500), notARefusal(ack, id, proto));
      if (sock.closed) break;
    }
  }));
  t.ok(sent > 160, `${sent} messages sent`);
  t.same(socks.map((s) => s.closed), [undefined, undefined, undefined, undefined], 'every socket is still open');
  f.assert(t, '/ingest acks');
});

t.test('/ingest socket: a text frame that is not UTF-8, and a message over MAX_BODY_BYTES, close only that socket', async (t) => {
  const bad = await Sock.open(svc.url, '/ingest', ['odds.v1.json']);
  bad.send(Buffer.from([0x7b, 0xff, 0xfe, 0x7d]), false);
  const c1 = await bad.whenClosed();
  // uWS fails the connection (RFC 6455 requires it); the ws client sees 1006 or 1007.
  t.ok(c1 && [1006, 1007].includes(c1.code), `closed with ${c1?.code}`);
  const big = await Sock.open(svc.url, '/ingest', ['odds.v1.proto']);
  big.send(Buffer.concat([Buffer.from(encodeIngestProto([SENTINEL])), pbField(99, 2, Buffer.alloc(MIB + 16))]), true);
  const c2 = await big.whenClosed();
  t.ok(c2 && [1006, 1009].includes(c2.code), `closed with ${c2?.code}`);
  const ok = await Sock.open(svc.url, '/ingest', ['odds.v1.json']);
  ok.send(JSON.stringify({ id: 7, data: [SENTINEL] }), false);
  t.notOk(notARefusal(await ok.next(), 7, false), 'a new socket is answered');
  ok.close();
});

t.test('values of the right JSON type that Postgres cannot store are a 400, not a 500 (one per kind of trouble the fuzz found)', async (t) => {
  const [si] = known.sis;
  const [eid] = known.eids;
  const [mid] = known.mids;
  const cases: [string, Obj][] = [
    ['NUL in a sport name', { kind: 'sport', si, na: 'a\u0000b' }],
    ['NUL in a league name', { kind: 'league', li: known.lis[0], na: '\u0000' }],
    ['NUL in an event tv', { kind: 'event', eid, tv: '\u0000' }],
    ['NUL in a result', { kind: 'result', mid, res: '\u0000' }],
    ['NUL in a runner name', { kind: 'market', mid: 'fuzz.new.1', eid, na: 'X', ty: 'match-odd', r: [{ rid: 1, na: 'a\u0000' }] }],
    ['NUL inside if', { kind: 'market', mid, if: { k: '\u0000' } }],
    ['a lone surrogate inside if', { kind: 'market', mid, if: '\ud800' }],
    ['if nested 5000 deep', { kind: 'market', mid, if: new Raw('['.repeat(5000) + ']'.repeat(5000)) }],
    ['di over 32 bits', { kind: 'market', mid, di: 2 ** 31 }],
    ['an event in year 0', { kind: 'event', eid, st: '0000-01-01T00:00:00Z' }],
    ['an event before year 1 after its offset', { kind: 'event', eid, st: '0001-01-01T00:00:00+14:00' }],
  ];
  for (const [what, item] of cases) {
    for (const format of ['json', 'proto'] as const) {
      const raw = Object.values(item).some((v) => v instanceof Raw);
      const proto = format === 'proto' && !raw ? encodable([item, SENTINEL]) : undefined;
      if (format === 'proto' && !proto) continue;
      const body = proto ? Buffer.from(proto) : Buffer.from(toJson({ data: [item, SENTINEL] }));
      const ct = proto ? 'application/x-protobuf' : 'application/json';
      const o = await rawHttp(svc.port, request('POST', '/api/v1/ingest', { headers: [['Content-Type', ct]], body }));
      t.notOk(notAnError(o, [400]), `${what} (${format}): ${o.reply?.status} ${o.reply?.body.toString().slice(0, 80)}`);
    }
  }
});

t.test('every item kind was generated', async (t) => {
  const g = new Gen(SEED + 4);
  const kinds = new Set(Array.from({ length: 300 }, () => ingestTemplate(g, known).kind));
  t.same([...kinds].sort(), [...INGEST_KINDS].sort());
});

function isUtf8(b: Buffer): boolean {
  try {
    new TextDecoder('utf-8', { fatal: true }).decode(b);
    return true;
  } catch {
    return false;
  }
}

afterwards(t, svc, () => before);
