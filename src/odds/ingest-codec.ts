/**
 * The protobuf ingest batch (`application/x-protobuf`, and binary frames on
 * `/ingest`) converted to and from the plain items the JSON ingest takes, so
 * both formats go through the one validation path.
 */
import { odds as pb } from './gen/odds.js';
import { MARKET_STATUSES, type IngestItemInput, type RunnerOdds } from './messages.js';
import { overLimit } from './ingest-count.js';
import { WHY_WIRE, enumName, enumValue, runnersFromProto, runnersToProto, settlementFromProto, settlementToProto, termsJson, termsToProto, traded, type Int64 } from './wire.js';
import { TERMS_RUNNER_STATUSES } from '../refdata/types.js';
import type { WireRunnerSettlement, WireTerms } from '../refdata/wire.js';

const v1 = pb.v1;
type Obj = Record<string, unknown>;

/**
 * A 64-bit ID as a plain number, even one past 2^53: ingest's validation refuses it as it refuses
 * the same number in JSON (the item alone for an odds-path item, naming the item and its field
 * for a reference item), rather than the decoder refusing the whole message unnamed.
 */
const wide = (v: Int64): number => (typeof v === 'number' ? v : v.toNumber());

/** Copies the scalar fields present on a decoded message; absent `optional` fields read as null. */
function present(src: object, keys: readonly string[], out: IngestItemInput): IngestItemInput {
  for (const k of keys) {
    const v = (src as Obj)[k];
    if (v != null) out[k] = typeof v === 'object' ? wide(v as Int64) : v;
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

const runners = (r: pb.v1.Runner[]) => r.map((x) => ({ rid: wide(x.rid), na: x.na }));

/** Keys JSON gives as null, which the proto form lists in `cleared`: each becomes null again. */
function clear(out: Obj, cleared: readonly string[]): Obj {
  for (const key of cleared) out[key] = null;
  return out;
}

function resultFromProto(r: pb.v1.ResultItem): IngestItemInput {
  const out = present(r, ['mid', 'res', 'rt', 'ia', 'mt', 'cert', 'at'], { kind: 'result' });
  if (r.has_rs) out.rs = settlementFromProto(r.rs as pb.v1.RunnerSettlement[]);
  return clear(out, r.cleared) as IngestItemInput;
}

function termsFromProtoItem(t: pb.v1.TermsItem): IngestItemInput {
  const out: IngestItemInput = { kind: 'terms', mid: t.mid, ...(t.terms ? termsJson({ ...(t.terms as unknown as WireTerms), r: undefined }) : {}) };
  clear(out, t.cleared);
  if (t.has_r) {
    out.r = (t.r as pb.v1.RunnerTermsItem[]).map((x, i) => {
      const runner: Obj = { rid: wide(x.rid) };
      if (x.st != null) runner.st = enumName(TERMS_RUNNER_STATUSES, x.st, `r[${i}].st`);
      return clear(present(x, ['af', 'rd', 'hc'], runner as IngestItemInput), x.cleared);
    });
  }
  return out;
}

function itemFromProto(it: pb.v1.IngestItem): IngestItemInput {
  switch (it.item) {
    case 'sport': return present(it.sport!, ['si', 'na', 'a'], { kind: 'sport' });
    case 'league': return present(it.league!, ['li', 'si', 'na'], { kind: 'league' });
    case 'result': return resultFromProto(it.result as pb.v1.ResultItem);
    case 'terms': return termsFromProtoItem(it.terms as pb.v1.TermsItem);
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
      if (m.has_r) out.r = runners(m.r as pb.v1.Runner[]);
      if (m.has_m) {
        out.m = (m.m as pb.v1.NestedMarket[]).map((n, i) => {
          const r = runners(n.r as pb.v1.Runner[]);
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
      const out: IngestItemInput = traded({ kind: 'odds', mid: o.mid, ts: o.ts, st, ip: o.ip, r: runnersFromProto(o.r as pb.v1.RunnerOdds[]) }, { tv: o.tv });
      if (o.sr != null) out.sr = o.sr;
      if (o.late) out.late = true;
      return out;
    }
    case 'suspend': {
      const s = it.suspend as pb.v1.SuspendItem;
      const out: IngestItemInput = { kind: 'suspend', eid: wide(s.eid), sr: s.sr, ts: s.ts };
      if (s.tys.length) out.tys = s.tys;
      return out;
    }
    case 'stale': {
      const { mid, why } = it.stale as pb.v1.StaleItem;
      // NONE (or a number this version does not know) is left for ingest's check to refuse, as a JSON item without `why` is.
      const name = WHY_WIRE[why];
      return name === undefined || name === 'NONE' ? { kind: 'stale', mid } : { kind: 'stale', mid, why: name };
    }
    default: throw new Error('item carries no kind');
  }
}

/**
 * Where the decoder leaves the problem of an odds item it could not convert (a status number this
 * version does not know, a ladder of an odd length), so that ingest refuses that item alone, as it
 * would the same item in JSON, and not the whole batch. A symbol: no JSON item can carry it.
 */
export const UNREADABLE = Symbol('unreadable odds item');

/**
 * An IngestBatch as the plain items the JSON ingest takes, counted on the wire
 * first (items, runners, levels) so an oversized one is refused before it is
 * built, with its `id` when it carries one: once the message decodes, a
 * refusal of its items carries it too, for the ack to echo. Never throws.
 */
export function decodeIngestProto(bytes: Uint8Array, maxItems: number): ({ data: IngestItemInput[] } | { error: string }) & { id?: number } {
  let batch: pb.v1.IngestBatch;
  try {
    const over = overLimit(bytes, maxItems);
    if (over) return { error: over };
    batch = v1.IngestBatch.decode(bytes);
  } catch (e) {
    return { error: `malformed protobuf IngestBatch: ${(e as Error).message}` };
  }
  const id = batch.id ? { id: batch.id } : {};
  const data: IngestItemInput[] = [];
  for (let i = 0; i < batch.data.length; i++) {
    const it = batch.data[i];
    try {
      data.push(itemFromProto(it));
    } catch (e) {
      if (it.item !== 'odds') return { error: `data[${i}]: ${(e as Error).message}`, ...id };
      data.push({ kind: 'odds', mid: it.odds!.mid, [UNREADABLE]: (e as Error).message });
    }
  }
  return { data, ...id };
}

const ifJson = (v: unknown) => (v === undefined ? undefined : JSON.stringify(v));

/** An item's keys given as null, for `cleared`; the rest as they are. */
const nulls = (o: Obj): string[] => Object.keys(o).filter((k) => o[k] === null);

function termsToProtoItem(item: Obj): pb.v1.TermsItem.$Properties {
  const { kind: _kind, mid, r, ...terms } = item;
  const given = Object.fromEntries(Object.entries(terms).filter(([, v]) => v !== null)) as WireTerms;
  return {
    mid: mid as string, terms: termsToProto(given), cleared: nulls(terms), has_r: r !== undefined,
    r: (r as Obj[] | undefined)?.map((x) => ({
      ...Object.fromEntries(Object.entries(x).filter(([, v]) => v !== null)),
      st: x.st === undefined ? undefined : enumValue(TERMS_RUNNER_STATUSES, x.st, 'r st'), cleared: nulls(x),
    })),
  };
}

// The item encoders read only their own fields, so `kind` and unknown keys are ignored.
function itemToProto(item: Obj): pb.v1.IngestItem.$Properties {
  switch (item.kind) {
    case 'sport': return { sport: item as pb.v1.SportItem.$Properties };
    case 'league': return { league: item as pb.v1.LeagueItem.$Properties };
    case 'result': return { result: {
      ...Object.fromEntries(Object.entries(item).filter(([, v]) => v !== null)), cleared: nulls(item), has_rs: Array.isArray(item.rs),
      rs: settlementToProto((item.rs ?? undefined) as WireRunnerSettlement[] | undefined),
    } };
    case 'terms': return { terms: termsToProtoItem(item) };
    case 'event': return { event: item.tv === null ? { ...item, tv: undefined, tv_null: true } : item };
    case 'market': {
      const m = item.m as Obj[] | undefined;
      return { market: {
        ...item, if_json: ifJson(item.if), has_r: item.r !== undefined, has_m: m !== undefined,
        m: m?.map((n) => ({ ...n, if_json: ifJson(n.if) })),
      } };
    }
    case 'odds': return { odds: traded({
      mid: item.mid as string, ts: item.ts as number, st: enumValue(MARKET_STATUSES, item.st, 'st'),
      ip: item.ip as boolean, r: runnersToProto(item.r as RunnerOdds[]), late: item.late === true, sr: item.sr as string | undefined,
    }, { tv: item.tv as number | undefined }) };
    case 'stale': return { stale: { mid: item.mid as string, why: enumValue(WHY_WIRE, item.why, 'why') } };
    case 'suspend': return { suspend: item as pb.v1.SuspendItem.$Properties };
    default: throw new Error(`unknown ingest kind ${String(item.kind)}`);
  }
}

/** The inverse of decodeIngestProto, for publishers, tests and benchmarks. Throws on an unknown kind. */
export function encodeIngestProto(data: Obj[], id?: number): Uint8Array {
  return v1.IngestBatch.encode({ data: data.map(itemToProto), id }).finish();
}
