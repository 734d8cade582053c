/**
 * Client-to-server requests in both formats, checked whole: what comes out is
 * either a request the hub can act on as it is, or the first problem in words
 * (with the request's id when it had a valid one, so the refusal can be acked).
 */
import { odds as pb } from './gen/odds.js';
import { CLIENT_OPS, type ClientMessage, type ClientOp, type Since } from './messages.js';
import { MAX_IDS, isMarketId, isPositiveId } from '../refdata/ids.js';
import { BETTING_TYPES, MARKET_TYPES, type BettingType, type MarketType } from '../refdata/types.js';
import { int, type Int64 } from './wire.js';
import { countClient } from './client-count.js';

const v1 = pb.v1;
const utf8 = new TextDecoder('utf-8', { fatal: true });
const OPS_TEXT = 'op must be one of subscribe, unsubscribe, ping';
export const MAX_DEPTH = 10;
export const CONFLATE = { min: 100, max: 60000 } as const;
export const MAX_EPOCH = 64;

type Decoded = ClientMessage | { error: string; id?: number };
type Fields = {
  op: unknown; id: unknown; mids?: unknown; eids?: unknown; sis?: unknown; depth?: unknown; conflate?: unknown; since?: unknown; delta?: unknown;
  tys?: unknown; ccs?: unknown; bts?: unknown; tip?: unknown;
};

class Refused extends Error {}
const refuse = (why: string): never => {
  throw new Refused(why);
};

function list<T>(v: unknown, name: string, valid: (x: unknown) => x is T, rule: string): T[] {
  if (v === undefined || v === null) return [];
  if (!Array.isArray(v)) return refuse(`${name} must be an array of ${rule}`);
  if (v.length > MAX_IDS) return refuse(`${name} must list 1 to ${MAX_IDS} ${name === 'mids' ? 'market IDs' : name === 'eids' || name === 'sis' ? 'IDs' : 'values'}, got ${v.length}`);
  const bad = v.findIndex((x) => !valid(x));
  if (bad >= 0) return refuse(`${name}[${bad}] must be ${rule}`);
  return [...new Set(v as T[])];
}

/**
 * How many markets `since.seqs` may hold: the markets the request names, or
 * with an event or sport filter the markets a socket may hold.
 */
function seqsLimit(mids: number, filters: boolean, maxMarkets: number): { limit: number; rule: string } {
  return filters ? { limit: maxMarkets, rule: `the markets a socket may hold (${maxMarkets})` } : { limit: mids, rule: `the ${mids} markets this request names in mids` };
}

const tooManySeqs = (n: number | string, { limit, rule }: { limit: number; rule: string }) =>
  `since.seqs holds ${n} markets; it may hold at most ${limit}, ${rule}`;

/** Whether an object has more than `limit` keys, counting no further than that. */
function moreKeysThan(o: object, limit: number): boolean {
  let n = 0;
  for (const k in o) if (Object.hasOwn(o, k) && ++n > limit) return true;
  return false;
}

function since(v: unknown, bound: { limit: number; rule: string }): Since {
  if (!v || typeof v !== 'object' || Array.isArray(v)) return refuse('since must be an object {"epoch": "...", "seqs": {"<mid>": seq}}');
  const { epoch, seqs } = v as Record<string, unknown>;
  if (typeof epoch !== 'string' || epoch.length > MAX_EPOCH) return refuse(`since.epoch must be a string of at most ${MAX_EPOCH} characters`);
  if (!seqs || typeof seqs !== 'object' || Array.isArray(seqs)) return refuse('since.seqs must be an object of market ID to seq');
  if (moreKeysThan(seqs, bound.limit)) return refuse(tooManySeqs(`more than ${bound.limit}`, bound));
  const out: Record<string, number> = Object.create(null);
  for (const [mid, seq] of Object.entries(seqs)) {
    if (!isMarketId(mid)) return refuse(`since.seqs has "${String(mid).slice(0, 70)}": keys must be market IDs`);
    const n = typeof seq === 'number' ? seq : NaN;
    if (!Number.isSafeInteger(n) || n < 0) return refuse(`since.seqs["${mid}"] must be a whole number`);
    out[mid] = n;
  }
  return { epoch, seqs: out };
}

const oneOf = <T>(values: readonly T[]) => (x: unknown): x is T => values.includes(x as T);
const isCountry = (x: unknown): x is string => typeof x === 'string' && /^[A-Z]{2}$/.test(x);

/**
 * A subscribe's narrowing of its `eids` and `sis` (market types, countries, betting types, turning
 * in play), onto `msg`; refused on an unsubscribe (which removes a whole filter) and without eids
 * or sis to narrow.
 */
function narrowing(f: Fields, msg: ClientMessage): void {
  const tys = list(f.tys, 'tys', oneOf<MarketType>(MARKET_TYPES), `a market type (${MARKET_TYPES.join(', ')})`);
  const ccs = list(f.ccs, 'ccs', isCountry, 'an ISO 3166 country code of two capital letters');
  const bts = list(f.bts, 'bts', oneOf<BettingType>(BETTING_TYPES), `a betting type (${BETTING_TYPES.join(', ')})`);
  if (f.tip != null && typeof f.tip !== 'boolean') refuse('tip must be true or false');
  const tip = f.tip == null ? undefined : (f.tip as boolean);
  if (!tys.length && !ccs.length && !bts.length && tip === undefined) return;
  if (msg.op === 'unsubscribe') refuse('tys, ccs, bts and tip narrow a subscribe; an unsubscribe by eids or sis removes the whole filter');
  if (!msg.eids!.length && !msg.sis!.length) refuse('tys, ccs, bts and tip narrow the markets of eids and sis: give eids or sis with them');
  if (tys.length) msg.tys = tys;
  if (ccs.length) msg.ccs = ccs;
  if (bts.length) msg.bts = bts;
  if (tip !== undefined) msg.tip = tip;
}

/** The checks every request passes, whatever its format. */
function check(f: Fields, maxMarkets: number): ClientMessage {
  const { op } = f;
  const id = f.id as number;
  if (!CLIENT_OPS.includes(op as ClientOp)) return refuse(OPS_TEXT);
  if (op === 'ping') return { op, id };
  const mids = list(f.mids, 'mids', isMarketId, 'a market ID matching [A-Za-z0-9._:-]{1,64}');
  const eids = list(f.eids, 'eids', isPositiveId, 'a positive integer event ID');
  const sis = list(f.sis, 'sis', isPositiveId, 'a positive integer sport ID');
  if (!mids.length && !eids.length && !sis.length) refuse(`mids must list 1 to ${MAX_IDS} market IDs, got 0`);
  const msg: ClientMessage = { op: op as ClientOp, id, mids, eids, sis };
  narrowing(f, msg);
  if (op === 'unsubscribe') return msg;
  if (f.depth != null) {
    if (!Number.isInteger(f.depth) || (f.depth as number) < 1 || (f.depth as number) > MAX_DEPTH) refuse(`depth must be a whole number from 1 to ${MAX_DEPTH} ladder levels`);
    msg.depth = f.depth as number;
  }
  if (f.conflate != null) {
    const c = f.conflate as number;
    if (!Number.isInteger(c) || (c !== 0 && (c < CONFLATE.min || c > CONFLATE.max))) refuse(`conflate must be 0 or a whole number of milliseconds from ${CONFLATE.min} to ${CONFLATE.max}`);
    if (c > 0) msg.conflate = c;
  }
  if (f.since != null) msg.since = since(f.since, seqsLimit(mids.length, eids.length + sis.length > 0, maxMarkets));
  if (f.delta != null) {
    if (typeof f.delta !== 'boolean') refuse('delta must be true or false');
    if (f.delta) msg.delta = true;
  }
  return msg;
}

function fields(f: Fields, maxMarkets: number): Decoded {
  const id = f.id;
  if (typeof id !== 'number' || !Number.isInteger(id) || id < 0 || id > 0xffffffff) return { error: 'id must be an integer from 0 to 4294967295' };
  try {
    return check(f, maxMarkets);
  } catch (err) {
    if (err instanceof Refused) return { error: err.message, id };
    throw err;
  }
}

function fromProto(m: pb.v1.ClientMessage): Fields {
  const ints = (xs: Int64[], name: string) => xs.map((x, i) => int(x, `${name}[${i}]`));
  const out: Fields = { op: m.op, id: m.id, mids: m.mids, eids: ints(m.eids as Int64[], 'eids'), sis: ints(m.sis as Int64[], 'sis') };
  if (m.depth != null) out.depth = m.depth;
  if (m.conflate != null) out.conflate = m.conflate;
  if (m.delta != null) out.delta = m.delta;
  if (m.tip != null) out.tip = m.tip;
  out.tys = m.tys;
  out.ccs = m.ccs;
  out.bts = m.bts;
  if (m.since) {
    const seqs: Record<string, number> = {};
    for (const [mid, seq] of Object.entries(m.since.seqs ?? {})) seqs[mid] = int(seq as Int64, `since.seqs["${mid}"]`);
    out.since = { epoch: m.since.epoch, seqs };
  }
  return out;
}

/**
 * Never throws: any malformed frame comes back as `{error}`. `maxMarkets` (a
 * socket's market limit) bounds `since.seqs` of a request with filters.
 */
export function decodeClient(data: ArrayBuffer, isBinary: boolean, maxMarkets: number): Decoded {
  if (isBinary) {
    let f: Fields;
    try {
      const bytes = new Uint8Array(data);
      // The seqs map is counted on the wire first, so an oversized one is never built.
      const wire = countClient(bytes);
      const bound = seqsLimit(wire.mids, wire.filters, maxMarkets);
      if (wire.seqs > bound.limit) return { error: tooManySeqs(wire.seqs, bound), id: wire.id };
      f = fromProto(v1.ClientMessage.decode(bytes));
    } catch (e) {
      return { error: `malformed protobuf ClientMessage: ${(e as Error).message}` };
    }
    return fields(f, maxMarkets);
  }
  let m: unknown;
  try {
    m = JSON.parse(utf8.decode(data));
  } catch (e) {
    return { error: `malformed JSON: ${(e as Error).message}` };
  }
  if (typeof m !== 'object' || m === null || Array.isArray(m)) return { error: 'message must be a JSON object' };
  return fields(m as Fields, maxMarkets);
}

export function encodeClientProto(msg: ClientMessage): Uint8Array {
  return v1.ClientMessage.encode(msg).finish();
}
