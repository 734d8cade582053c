import { isMarketId, isPositiveId } from '../refdata/ids.js';

/**
 * The checks of one field of an ingest item, as the publisher sent it: each returns the value
 * typed, or throws `Invalid` naming the field by its wire key and the rule it broke.
 */
export type Obj = Record<string, unknown>;

export class Invalid extends Error {}

export const fail = (field: string, rule: string): never => {
  throw new Invalid(`${field} ${rule}`);
};

export function opt<T>(o: Obj, key: string, check: (v: unknown, key: string) => T): T | undefined {
  return key in o ? check(o[key], key) : undefined;
}

/** A UTF-16 surrogate without its other half. */
export const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

export const text = (max: number) => (v: unknown, key: string): string => {
  if (typeof v !== 'string' || v.length > max) return fail(key, `must be a string of at most ${max} characters`);
  // Postgres text cannot hold NUL: refuse it here rather than fail inside the transaction.
  if (v.includes('\u0000')) return fail(key, 'must not contain NUL characters');
  // Nor a lone surrogate: it would be stored as U+FFFD, not the name that was sent and acked.
  return LONE_SURROGATE.test(v) ? fail(key, 'must not contain lone surrogates (an unpaired \\ud800 to \\udfff)') : v;
};
export const flag = (v: unknown, key: string): boolean => (typeof v === 'boolean' ? v : fail(key, 'must be true or false'));
export const id = (v: unknown, key: string): number => (isPositiveId(v) ? v : fail(key, 'must be a positive integer'));
export const marketId = (v: unknown, key: string): string => (isMarketId(v) ? v : fail(key, 'must match [A-Za-z0-9._:-]{1,64}'));
export const nullable = <T>(check: (v: unknown, key: string) => T) => (v: unknown, key: string): T | null => (v === null ? null : check(v, key));
/** The display ID column is a Postgres integer. */
export const integer = (v: unknown, key: string): number =>
  Number.isInteger(v) && (v as number) >= -(2 ** 31) && (v as number) < 2 ** 31 ? (v as number) : fail(key, 'must be an integer from -2147483648 to 2147483647');
export const float = (v: unknown, key: string): number => (typeof v === 'number' && Number.isFinite(v) ? v : fail(key, 'must be a number'));
