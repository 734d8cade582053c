/**
 * Every server frame is checked before the client uses it: the shape and types of each key it
 * reads, per op, from one table (FRAMES). A frame that fails is dropped and told as an `error`
 * event; a frame whose op the client does not know (a newer server's) is skipped without one.
 * Keys the table does not name are left alone, so a server may add keys to a frame.
 */
import { decodeServerProto, UnknownServerMessage } from '../odds/codec.js';
import { MAX_EPOCH } from '../odds/client-codec.js';
import { FEED_STATUSES, INGEST_LIMITS, MARKET_STATUSES, RUNNER_STATUSES, STALE_WHYS, type ServerMessage } from '../odds/messages.js';
import { isMarketId, isPositiveId } from '../refdata/ids.js';
import { BETTING_TYPES, CERTAINTIES, SETTLED_STATUSES, TERMS_RUNNER_STATUSES } from '../refdata/types.js';

/** One key's rule: whether a value passes, and what it must be, for the error. */
interface KeyRule {
  ok(v: unknown): boolean;
  what: string;
}

type Keys = Readonly<Record<string, KeyRule>>;

/** A frame's keys, and what must hold between them. */
interface FrameShape {
  keys: Keys;
  also?: (m: Record<string, any>) => string | undefined;
}

const rule = (what: string, ok: (v: unknown) => boolean): KeyRule => ({ ok, what });
const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const finite = (v: unknown): v is number => typeof v === 'number' && Number.isFinite(v);

const bool = rule('true or false', (v) => typeof v === 'boolean');
const text = rule('a string', (v) => typeof v === 'string');
const mid = rule('a market ID ([A-Za-z0-9._:-]{1,64})', isMarketId);
const epoch = rule(`a string of 1 to ${MAX_EPOCH} characters`, (v) => typeof v === 'string' && v.length > 0 && v.length <= MAX_EPOCH);
const seq = rule('a whole number from 1', (v) => Number.isSafeInteger(v) && (v as number) >= 1);
const count = rule('a whole number from 0', (v) => Number.isSafeInteger(v) && (v as number) >= 0);
const time = rule('a time in ms since the epoch', (v) => finite(v) && v >= 0);
const amount = rule('a finite number from 0', (v) => finite(v) && v >= 0);
const uint32 = rule('a whole number from 0 to 4294967295', (v) => Number.isInteger(v) && (v as number) >= 0 && (v as number) <= 0xffffffff);
const oneOf = (values: readonly unknown[]) => rule(`one of ${values.join(', ')}`, (v) => values.includes(v));
const optional = (r: KeyRule): KeyRule => rule(`absent or ${r.what}`, (v) => v === undefined || r.ok(v));
const list = (r: KeyRule, name: string, max = Infinity) =>
  rule(max === Infinity ? `a list of ${name}` : `a list of at most ${max} ${name}`, (v) => Array.isArray(v) && v.length <= max && v.every((x) => r.ok(x)));
const tuple = (name: string, ...rules: KeyRule[]) =>
  rule(name, (v) => Array.isArray(v) && v.length === rules.length && rules.every((r, i) => r.ok(v[i])));
const object = (name: string, keys: Keys) => rule(name, (v) => isObject(v) && firstBad(keys, v) === undefined);

const LEVELS = INGEST_LIMITS.levels;
const level = tuple('[price, size]', amount, amount);
/** A delta may set every position of a ladder and clear as many again. */
const change = tuple('[i, price, size]', rule('a position', (v) => Number.isSafeInteger(v) && (v as number) >= 0 && (v as number) < 2 * LEVELS), amount, amount);
const runnerStatus = oneOf(RUNNER_STATUSES);
const rid = rule('a positive whole number', isPositiveId);
const runner = object('{rid, st, b, l, ltp?, tv?}', {
  rid, st: runnerStatus, b: list(level, 'levels', LEVELS), l: list(level, 'levels', LEVELS),
  ltp: optional(amount), tv: optional(amount),
});
const runnerDelta = object('{rid, st?, b?, l?, ltp?, tv?}', {
  rid, st: optional(runnerStatus),
  b: optional(list(change, 'changes', 2 * LEVELS)), l: optional(list(change, 'changes', 2 * LEVELS)), ltp: optional(amount), tv: optional(amount),
});
const marketStatus = oneOf(MARKET_STATUSES);
const RUNNERS = INGEST_LIMITS.runners;
const number = rule('a finite number', finite);
const runnerTerms = object('{rid, st, af?, rd?, hc?}', { rid, st: oneOf(TERMS_RUNNER_STATUSES), af: optional(amount), rd: optional(time), hc: optional(number) });
const terms = object('market terms {bd?, tip?, sus?, bt?, nw?, ewd?, bsp?, cc?, ven?, race?, mbr?, reg?, lmin?, lmax?, lint?, r?}', {
  bd: optional(count), tip: optional(bool), sus: optional(time), bt: optional(oneOf(BETTING_TYPES)), nw: optional(count), ewd: optional(amount),
  bsp: optional(bool), cc: optional(text), ven: optional(text), race: optional(text), mbr: optional(amount), reg: optional(list(text, 'strings')),
  lmin: optional(number), lmax: optional(number), lint: optional(amount), r: optional(list(runnerTerms, 'runners {rid, st, af?, rd?, hc?}', RUNNERS)),
});
const runnerSettlement = object('{rid, st, dh?, vf?}', { rid, st: oneOf(SETTLED_STATUSES), dh: optional(amount), vf: optional(amount) });

/**
 * What the client reads of each op it knows. A new op is one more entry: its keys, and what
 * must hold between them, if anything.
 */
export const FRAMES: Readonly<Record<ServerMessage['op'], FrameShape>> = {
  odds: {
    keys: {
      mid, epoch, seq, ts: time, pt: time, st: marketStatus, sr: optional(text), ip: bool, con: bool, cf: bool, r: list(runner, 'runners {rid, st, b, l, ltp?, tv?}', RUNNERS),
      tv: optional(amount),
    },
  },
  delta: {
    keys: {
      mid, epoch, seq, from: seq, ts: time, pt: time, st: marketStatus, sr: optional(text), ip: bool, r: list(runnerDelta, 'runner changes {rid, st?, b?, l?, ltp?, tv?}', RUNNERS),
      tv: optional(amount),
    },
    // A delta leads to a newer image: one that would lead back is no delta.
    also: (m) => (m.seq > m.from ? undefined : `seq ${m.seq} must be above from ${m.from}`),
  },
  ack: { keys: { id: uint32, status: oneOf([0, 1]), message: text, current: optional(count) } },
  notice: { keys: { status: oneOf([0]), message: text } },
  market: { keys: { mid, s: bool, go: bool, rt: bool, terms: optional(terms) } },
  result: {
    keys: {
      mid, mt: text, res: text, rt: bool, ia: bool, cert: optional(oneOf(CERTAINTIES)), at: optional(time),
      rs: optional(list(runnerSettlement, 'runners {rid, st, dh?, vf?}', RUNNERS)),
    },
  },
  unsubscribed: { keys: { mids: list(mid, 'market IDs') } },
  feed: { keys: { status: oneOf(FEED_STATUSES) } },
  hb: { keys: { ts: time } },
  clock: { keys: { ts: time } },
  freshness: {
    keys: { mid, live: bool, why: optional(oneOf(STALE_WHYS)), at: time },
    // A stale market always says why; a live one has nothing to say.
    also: (m) => ((m.live === true) === (m.why === undefined) ? undefined : m.live ? 'a live market has no why' : 'a stale market must say why'),
  },
};

function firstBad(keys: Keys, o: Record<string, unknown>): string | undefined {
  for (const key in keys) if (!keys[key].ok(o[key])) return `${key} must be ${keys[key].what}`;
  return undefined;
}

/** What a frame turned out to be: a message to use, one of an op the client does not know, or a reason to drop it. */
export type Read = { msg: ServerMessage } | { unknown: true } | { error: string };

/** Checks a decoded frame against its op's entry in FRAMES. */
export function check(value: unknown): Read {
  if (!isObject(value)) return { error: 'a frame must be a JSON object' };
  const op = value.op;
  if (typeof op !== 'string') return { error: 'a frame must have an op' };
  if (!Object.hasOwn(FRAMES, op)) return { unknown: true };
  const frame = FRAMES[op as ServerMessage['op']];
  const bad = firstBad(frame.keys, value) ?? frame.also?.(value);
  return bad === undefined ? { msg: value as unknown as ServerMessage } : { error: `${op} frame dropped: ${bad}` };
}

/** A text frame (JSON) or a binary one (protobuf), decoded and checked. */
export function readFrame(data: unknown): Read {
  let value: unknown;
  try {
    if (typeof data === 'string') value = JSON.parse(data);
    else if (data instanceof ArrayBuffer) value = decodeServerProto(new Uint8Array(data));
    else if (ArrayBuffer.isView(data)) value = decodeServerProto(new Uint8Array(data.buffer, data.byteOffset, data.byteLength));
    else return { error: 'a frame must be text or binary' };
  } catch (err) {
    if (err instanceof UnknownServerMessage) return { unknown: true };
    return { error: `undecodable frame: ${(err as Error).message}` };
  }
  return check(value);
}
