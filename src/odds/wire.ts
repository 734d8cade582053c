/**
 * Conversions shared by every protobuf message of the protocol: enums by name,
 * 64-bit integers, and ladders flattened to packed lists.
 */
import type { odds as pb } from './gen/odds.js';
import { RUNNER_STATUSES, type Level, type PriceSize, type RunnerDelta, type RunnerOdds, type StaleWhy } from './messages.js';
import { SETTLED_STATUSES, TERMS_RUNNER_STATUSES } from '../refdata/types.js';
import { TERMS_KEYS, type WireRunnerSettlement, type WireRunnerTerms, type WireSettlement, type WireTerms } from '../refdata/wire.js';

export type Int64 = number | { toNumber(): number };

/** Enum name to wire number; unknown names throw rather than silently becoming 0. */
export function enumValue(names: readonly string[], name: unknown, what: string): number {
  const i = names.indexOf(name as string);
  if (i < 0) throw new Error(`${what} must be one of ${names.join(', ')}, got ${String(name)}`);
  return i;
}

export function enumName<T>(names: readonly T[], value: number, what: string): T {
  const name = names[value];
  if (name === undefined) throw new Error(`unknown ${what} ${value}`);
  return name;
}

/** `Freshness.Why` by wire number (proto/odds.proto), in frames and in `stale` ingest items; NONE is live. */
export const WHY_WIRE: readonly (StaleWhy | 'NONE')[] = ['NONE', 'publisher', 'late', 'unreliable', 'bus', 'behind'];

/** protobufjs reads 64-bit integers as Long; the JSON shape wants plain numbers. */
export function int(v: Int64, what: string): number {
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

/** Copies a suspension's reason where it is present (absent in JSON, null from a decoded proto). */
export function reasoned<T extends object>(out: T, src: { sr?: string | null }): T {
  if (src.sr != null) (out as { sr?: string }).sr = src.sr;
  return out;
}

/**
 * Copies `ltp` and `tv` where they are present. They are optional in both formats: absent means
 * unknown, never 0, so an absent one (undefined in JSON, null from a decoded proto) stays absent.
 */
export function traded<T extends object>(out: T, src: { ltp?: number | null; tv?: number | null }): T {
  const o = out as { ltp?: number; tv?: number };
  if (src.ltp != null) o.ltp = src.ltp;
  if (src.tv != null) o.tv = src.tv;
  return out;
}

export const runnersToProto = (r: RunnerOdds[]): pb.v1.RunnerOdds.$Properties[] =>
  r.map((x) => traded({
    rid: x.rid, st: enumValue(RUNNER_STATUSES, x.st, 'runner st'), b: flatten(x.b), l: flatten(x.l),
  }, x));

export const runnersFromProto = (r: pb.v1.RunnerOdds[]): RunnerOdds[] =>
  r.map((x, i) => traded({
    rid: int(x.rid, `r[${i}].rid`),
    st: enumName(RUNNER_STATUSES, x.st, `r[${i}].st`),
    b: pairs(x.b, `r[${i}].b`),
    l: pairs(x.l, `r[${i}].l`),
  }, x));

/** Delta ladders: [[i,price,size],...] to the packed [i0,price0,size0,...] of the proto. */
const flattenLevels = (levels: Level[]): number[] => levels.flat();

function levels(flat: number[], what: string): Level[] {
  if (flat.length % 3 !== 0) throw new Error(`${what} must hold [i,price,size] triples`);
  const out = new Array<Level>(flat.length / 3);
  for (let i = 0; i < out.length; i++) out[i] = [flat[3 * i], flat[3 * i + 1], flat[3 * i + 2]];
  return out;
}

export const runnerDeltasToProto = (r: RunnerDelta[]): pb.v1.RunnerDelta.$Properties[] =>
  r.map((x) => {
    const out: pb.v1.RunnerDelta.$Properties = traded({ rid: x.rid }, x);
    if (x.st !== undefined) out.st = enumValue(RUNNER_STATUSES, x.st, 'runner st');
    if (x.b) out.b = flattenLevels(x.b);
    if (x.l) out.l = flattenLevels(x.l);
    return out;
  });

/** Back to the JSON shape, keys in protocol order; an empty side did not change. */
export const runnerDeltasFromProto = (r: pb.v1.RunnerDelta[]): RunnerDelta[] =>
  r.map((x, i) => {
    const out: RunnerDelta = { rid: int(x.rid, `r[${i}].rid`) };
    if (x.st != null) out.st = enumName(RUNNER_STATUSES, x.st, 'runner st');
    if (x.b.length) out.b = levels(x.b, `r[${i}].b`);
    if (x.l.length) out.l = levels(x.l, `r[${i}].l`);
    return traded(out, x);
  });

/** A runner's terms, keys in protocol order: `af`, `rd`, `hc` only when given. */
function runnerTermsJson(r: WireRunnerTerms): WireRunnerTerms {
  const out: WireRunnerTerms = { rid: r.rid, st: r.st };
  if (r.af != null) out.af = r.af;
  if (r.rd != null) out.rd = r.rd;
  if (r.hc != null) out.hc = r.hc;
  return out;
}

/**
 * Terms with their keys in protocol order whatever order they were built in, each only when
 * given (a decoded proto's absent optional reads as null, an absent list as empty).
 */
export function termsJson(t: WireTerms): WireTerms {
  const out: Record<string, unknown> = {};
  for (const [, key] of TERMS_KEYS) {
    const v = t[key];
    if (v != null && !(Array.isArray(v) && v.length === 0)) out[key] = v;
  }
  if (t.r?.length) out.r = t.r.map(runnerTermsJson);
  return out as WireTerms;
}

export function termsToProto(t: WireTerms): pb.v1.MarketTerms.$Properties {
  const { r, ...rest } = t;
  return { ...rest, r: r?.map((x) => ({ ...x, st: enumValue(TERMS_RUNNER_STATUSES, x.st, 'terms runner st') })) };
}

export function termsFromProto(t: pb.v1.MarketTerms): WireTerms {
  const out = termsJson({ ...(t as unknown as WireTerms), r: undefined });
  if (t.r.length) {
    out.r = (t.r as pb.v1.RunnerTerms[]).map((x, i) =>
      runnerTermsJson({ ...(x as unknown as WireRunnerTerms), rid: int(x.rid, `terms.r[${i}].rid`), st: enumName(TERMS_RUNNER_STATUSES, x.st, `terms.r[${i}].st`) }));
  }
  return out;
}

function runnerSettlementJson(r: WireRunnerSettlement): WireRunnerSettlement {
  const out: WireRunnerSettlement = { rid: r.rid, st: r.st };
  if (r.dh != null) out.dh = r.dh;
  if (r.vf != null) out.vf = r.vf;
  return out;
}

/** A result's settlement keys in protocol order (`cert`, `at`, `rs`), added to `out` where given. */
export function settled<T extends object>(out: T, s: WireSettlement | { cert?: string | null; at?: number | null; rs?: WireRunnerSettlement[] }): T & WireSettlement {
  const o = out as T & WireSettlement;
  if (s.cert != null) o.cert = s.cert as WireSettlement['cert'];
  if (s.at != null) o.at = s.at;
  if (s.rs?.length) o.rs = s.rs.map(runnerSettlementJson);
  return o;
}

export const settlementToProto = (rs: WireRunnerSettlement[] | undefined): pb.v1.RunnerSettlement.$Properties[] | undefined =>
  rs?.map((x) => ({ ...x, st: enumValue(SETTLED_STATUSES, x.st, 'rs st') }));

export const settlementFromProto = (rs: pb.v1.RunnerSettlement[]): WireRunnerSettlement[] =>
  rs.map((x, i) => runnerSettlementJson({ ...(x as unknown as WireRunnerSettlement), rid: int(x.rid, `rs[${i}].rid`), st: enumName(SETTLED_STATUSES, x.st, `rs[${i}].st`) }));
