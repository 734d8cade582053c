/**
 * Both wire formats of the odds protocol. The server encodes each update once per format and
 * publishes the same bytes to every subscriber, so encoding goes straight to the static
 * protobuf code (no reflection) and to one JSON.stringify of a freshly ordered object.
 */
import { odds as pb } from './gen/odds.js';
import {
  CLIENT_OPS, FEED_STATUSES, MARKET_STATUSES, RUNNER_STATUSES,
  type ClientMessage, type ClientOp, type IngestItemInput, type PriceSize,
  type RunnerOdds, type ServerMessage,
} from './messages.js';

const v1 = pb.v1;
type Int64 = number | { toNumber(): number };

/** Enum name to wire number; unknown names throw rather than silently becoming 0. */
function enumValue(names: readonly string[], name: unknown, what: string): number {
  const i = names.indexOf(name as string);
  if (i < 0) throw new Error(`${what} must be one of ${names.join(', ')}, got ${String(name)}`);
  return i;
}

function enumName<T>(names: readonly T[], value: number, what: string): T {
  const name = names[value];
  if (name === undefined) throw new Error(`unknown ${what} ${value}`);
  return name;
}

/** protobufjs reads 64-bit integers as Long; the JSON shape wants plain numbers. */
function int(v: Int64, what: string): number {
  const n = typeof v === 'number' ? v : v.toNumber();
  if (!Number.isSafeInteger(n)) throw new Error(`${what} is outside the safe integer range`);
  return n;
}

/** [[price,size],...] to the packed [price0,size0,...] of the proto. */
function flatten(pairs: PriceSize[]): number[] {
  const out = new Array<number>(pairs.length * 2);
  for (let i = 0; i < pairs.length; i++) {
    out[2 * i] = pairs[i][0];
    out[2 * i + 1] = pairs[i][1];
  }
  return out;
}

function pairs(flat: number[], what: string): PriceSize[] {
  if (flat.length % 2 !== 0) throw new Error(`${what} has an odd number of values`);
  const out = new Array<PriceSize>(flat.length / 2);
  for (let i = 0; i < out.length; i++) out[i] = [flat[2 * i], flat[2 * i + 1]];
  return out;
}

const runnersToProto = (r: RunnerOdds[]): pb.v1.RunnerOdds.$Properties[] =>
  r.map((x) => ({
    rid: x.rid, st: enumValue(RUNNER_STATUSES, x.st, 'runner st'), b: flatten(x.b), l: flatten(x.l),
  }));

const runnersFromProto = (r: pb.v1.RunnerOdds[]): RunnerOdds[] =>
  r.map((x, i) => ({
    rid: int(x.rid, `r[${i}].rid`),
    st: enumName(RUNNER_STATUSES, x.st, 'runner st'),
    b: pairs(x.b, `r[${i}].b`),
    l: pairs(x.l, `r[${i}].l`),
  }));

// ---- server to client ----

/** The JSON text frame, keys in protocol order whatever order the caller built them in. */
export function encodeJson(msg: ServerMessage): string {
  switch (msg.op) {
    case 'odds':
      return JSON.stringify({
        op: 'odds', mid: msg.mid, seq: msg.seq, ts: msg.ts, pt: msg.pt, st: msg.st, ip: msg.ip,
        con: msg.con === true, r: msg.r.map((x) => ({ rid: x.rid, st: x.st, b: x.b, l: x.l })),
      });
    case 'ack': return JSON.stringify({ op: 'ack', id: msg.id, status: msg.status, message: msg.message });
    case 'market': return JSON.stringify({ op: 'market', mid: msg.mid, s: msg.s, go: msg.go, rt: msg.rt });
    case 'result':
      return JSON.stringify({ op: 'result', mid: msg.mid, mt: msg.mt, res: msg.res, rt: msg.rt, ia: msg.ia });
    case 'unsubscribed': return JSON.stringify({ op: 'unsubscribed', mids: msg.mids });
    case 'hb': return JSON.stringify({ op: 'hb', ts: msg.ts });
    case 'feed': return JSON.stringify({ op: 'feed', status: msg.status });
  }
}

export function encodeProto(msg: ServerMessage): Uint8Array {
  let m: pb.v1.ServerMessage.$Properties;
  switch (msg.op) {
    case 'odds':
      m = { odds: {
        mid: msg.mid, seq: msg.seq, ts: msg.ts, pt: msg.pt, st: enumValue(MARKET_STATUSES, msg.st, 'st'),
        ip: msg.ip, con: msg.con, r: runnersToProto(msg.r),
      } };
      break;
    // The proto encoders read only their own fields, so `op` needs no stripping.
    case 'ack': m = { ack: msg }; break;
    case 'market': m = { market: msg }; break;
    case 'result': m = { result: msg }; break;
    case 'unsubscribed': m = { unsubscribed: msg }; break;
    case 'hb': m = { hb: msg }; break;
    case 'feed': m = { feed: { status: enumValue(FEED_STATUSES, msg.status, 'feed status') } }; break;
  }
  return v1.ServerMessage.encode(m).finish();
}

/** Reads a binary frame back into the JSON shape. Throws on malformed input. */
export function decodeServerProto(bytes: Uint8Array): ServerMessage {
  const m = v1.ServerMessage.decode(bytes);
  switch (m.msg) {
    case 'ack': {
      const a = m.ack as pb.v1.Ack;
      return { op: 'ack', id: a.id, status: a.status === 1 ? 1 : 0, message: a.message };
    }
    case 'odds': {
      const o = m.odds as pb.v1.Odds;
      return {
        op: 'odds', mid: o.mid, seq: int(o.seq, 'seq'), ts: o.ts, pt: o.pt,
        st: enumName(MARKET_STATUSES, o.st, 'st'), ip: o.ip, con: o.con,
        r: runnersFromProto(o.r as pb.v1.RunnerOdds[]),
      };
    }
    case 'market': {
      const s = m.market as pb.v1.MarketState;
      return { op: 'market', mid: s.mid, s: s.s, go: s.go, rt: s.rt };
    }
    case 'result': {
      const r = m.result as pb.v1.Result;
      return { op: 'result', mid: r.mid, mt: r.mt, res: r.res, rt: r.rt, ia: r.ia };
    }
    case 'unsubscribed': return { op: 'unsubscribed', mids: (m.unsubscribed as pb.v1.Unsubscribed).mids };
    case 'hb': return { op: 'hb', ts: (m.hb as pb.v1.Heartbeat).ts };
    case 'feed':
      return { op: 'feed', status: enumName(FEED_STATUSES, (m.feed as pb.v1.Feed).status, 'feed status') };
    default: throw new Error('server message carries no known message');
  }
}

/** Reads a text frame. Throws on malformed input. */
export function decodeServerJson(text: string): ServerMessage {
  const m: unknown = JSON.parse(text);
  const ops = ['ack', 'odds', 'market', 'result', 'unsubscribed', 'hb', 'feed'];
  if (typeof m !== 'object' || m === null || !ops.includes((m as { op?: unknown }).op as string)) {
    throw new Error('not a server message');
  }
  return m as ServerMessage;
}

// ---- client to server ----

const utf8 = new TextDecoder('utf-8', { fatal: true });
const OPS_TEXT = 'op must be one of subscribe, unsubscribe, ping';

/** Checks a request's fields; `id` is reported back when valid so the caller can ack it. */
function clientFields(op: unknown, id: unknown, mids: unknown): ClientMessage | { error: string; id?: number } {
  if (typeof id !== 'number' || !Number.isInteger(id) || id < 0 || id > 0xffffffff) {
    return { error: 'id must be an integer from 0 to 4294967295' };
  }
  if (!CLIENT_OPS.includes(op as ClientOp)) return { error: OPS_TEXT, id };
  if (op === 'ping') return { op, id };
  if (mids === undefined) return { op: op as ClientOp, id, mids: [] };
  if (!Array.isArray(mids) || !mids.every((x) => typeof x === 'string')) {
    return { error: 'mids must be an array of strings', id };
  }
  return { op: op as ClientOp, id, mids };
}

/** Never throws: any malformed frame comes back as `{error}`. */
export function decodeClient(data: ArrayBuffer, isBinary: boolean): ClientMessage | { error: string; id?: number } {
  if (isBinary) {
    let m: pb.v1.ClientMessage;
    try {
      m = v1.ClientMessage.decode(new Uint8Array(data));
    } catch (e) {
      return { error: `malformed protobuf ClientMessage: ${(e as Error).message}` };
    }
    return clientFields(m.op, m.id, m.mids);
  }
  let m: unknown;
  try {
    m = JSON.parse(utf8.decode(data));
  } catch (e) {
    return { error: `malformed JSON: ${(e as Error).message}` };
  }
  if (typeof m !== 'object' || m === null || Array.isArray(m)) return { error: 'message must be a JSON object' };
  const { op, id, mids } = m as Record<string, unknown>;
  return clientFields(op, id, mids);
}

export function encodeClientProto(msg: ClientMessage): Uint8Array {
  return v1.ClientMessage.encode(msg).finish();
}

// ---- ingest ----

type Obj = Record<string, unknown>;

/** Copies the scalar fields present on a decoded message; absent `optional` fields read as null. */
function present(src: object, keys: readonly string[], out: IngestItemInput): IngestItemInput {
  for (const k of keys) {
    const v = (src as Obj)[k];
    if (v != null) out[k] = typeof v === 'object' ? int(v as Int64, k) : v;
  }
  return out;
}

function parseIf(json: string, what: string): unknown {
  try {
    return JSON.parse(json);
  } catch {
    throw new Error(`${what} is not valid JSON`);
  }
}

const runners = (r: pb.v1.Runner[], what: string) =>
  r.map((x, i) => ({ rid: int(x.rid, `${what}[${i}].rid`), na: x.na }));

function itemFromProto(it: pb.v1.IngestItem): IngestItemInput {
  switch (it.item) {
    case 'sport': return present(it.sport!, ['si', 'na', 'a'], { kind: 'sport' });
    case 'league': return present(it.league!, ['li', 'si', 'na'], { kind: 'league' });
    case 'result': return present(it.result!, ['mid', 'res', 'rt', 'ia', 'mt'], { kind: 'result' });
    case 'event': {
      const e = it.event!;
      const out = present(e, ['eid', 'na', 'le', 'st', 'go', 'ip', 'si', 'li', 'tv'], { kind: 'event' });
      if (e.tv_null) out.tv = null;
      return out;
    }
    case 'market': {
      const m = it.market as pb.v1.MarketItem;
      const keys = ['mid', 'eid', 'na', 'si', 's', 'go', 'rt', 'ty', 'di', 'bl'];
      const out = present(m, keys, { kind: 'market' });
      if (m.if_json != null) out.if = parseIf(m.if_json, 'if_json');
      if (m.has_r) out.r = runners(m.r as pb.v1.Runner[], 'r');
      if (m.has_m) {
        out.m = (m.m as pb.v1.NestedMarket[]).map((n, i) => {
          const r = runners(n.r as pb.v1.Runner[], `m[${i}].r`);
          const nested: Obj = { mid: n.mid, s: n.s, go: n.go, r };
          if (n.if_json != null) nested.if = parseIf(n.if_json, `m[${i}].if_json`);
          return nested;
        });
      }
      return out;
    }
    case 'odds': {
      const o = it.odds as pb.v1.OddsItem;
      const st = enumName(MARKET_STATUSES, o.st, 'st');
      return { kind: 'odds', mid: o.mid, ts: o.ts, st, ip: o.ip, r: runnersFromProto(o.r as pb.v1.RunnerOdds[]) };
    }
    default: throw new Error('item carries no kind');
  }
}

/** An IngestBatch as the plain items the JSON ingest takes. Never throws. */
export function decodeIngestProto(bytes: Uint8Array): { data: IngestItemInput[] } | { error: string } {
  let batch: pb.v1.IngestBatch;
  try {
    batch = v1.IngestBatch.decode(bytes);
  } catch (e) {
    return { error: `malformed protobuf IngestBatch: ${(e as Error).message}` };
  }
  const data: IngestItemInput[] = [];
  for (let i = 0; i < batch.data.length; i++) {
    try {
      data.push(itemFromProto(batch.data[i]));
    } catch (e) {
      return { error: `data[${i}]: ${(e as Error).message}` };
    }
  }
  return { data };
}

const ifJson = (v: unknown) => (v === undefined ? undefined : JSON.stringify(v));

// The item encoders read only their own fields, so `kind` and unknown keys are ignored.
function itemToProto(item: Obj): pb.v1.IngestItem.$Properties {
  switch (item.kind) {
    case 'sport': return { sport: item as pb.v1.SportItem.$Properties };
    case 'league': return { league: item as pb.v1.LeagueItem.$Properties };
    case 'result': return { result: item as pb.v1.ResultItem.$Properties };
    case 'event': return { event: item.tv === null ? { ...item, tv: undefined, tv_null: true } : item };
    case 'market': {
      const m = item.m as Obj[] | undefined;
      return { market: {
        ...item, if_json: ifJson(item.if), has_r: item.r !== undefined, has_m: m !== undefined,
        m: m?.map((n) => ({ ...n, if_json: ifJson(n.if) })),
      } };
    }
    case 'odds': return { odds: {
      mid: item.mid as string, ts: item.ts as number, st: enumValue(MARKET_STATUSES, item.st, 'st'),
      ip: item.ip as boolean, r: runnersToProto(item.r as RunnerOdds[]),
    } };
    default: throw new Error(`unknown ingest kind ${String(item.kind)}`);
  }
}

/** The inverse of decodeIngestProto, for publishers, tests and benchmarks. Throws on an unknown kind. */
export function encodeIngestProto(data: Obj[]): Uint8Array {
  return v1.IngestBatch.encode({ data: data.map(itemToProto) }).finish();
}
