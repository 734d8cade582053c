/**
 * Conversions shared by every protobuf message of the protocol: enums by name,
 * 64-bit integers, and ladders flattened to packed lists.
 */
import type { odds as pb } from './gen/odds.js';
import { RUNNER_STATUSES, type PriceSize, type RunnerOdds } from './messages.js';

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
    st: enumName(RUNNER_STATUSES, x.st, 'runner st'),
    b: pairs(x.b, `r[${i}].b`),
    l: pairs(x.l, `r[${i}].l`),
  }, x));
