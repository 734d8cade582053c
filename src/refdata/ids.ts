/** The ID rules shared by REST parameters, request bodies, socket messages and ingest. */
export const MAX_IDS = 50;

/**
 * Reads one kind of ID written in `text` between `start` and `end`, or returns
 * undefined if that is not one. REST reads up to 50 per request out of the
 * query string in place, without cutting it into pieces first.
 */
export type IdRule<T> = (text: string, start: number, end: number) => T | undefined;

/** 1 to 16 decimal digits, no leading zero, representable exactly. */
export const POSITIVE_ID: IdRule<number> = (text, start, end) => {
  if (end <= start || end - start > 16 || text.charCodeAt(start) === 48) return undefined;
  let n = 0;
  for (let i = start; i < end; i++) {
    const d = text.charCodeAt(i) - 48;
    if (d < 0 || d > 9) return undefined;
    // Exact below 2^53; above it rounding never brings the value back under, so the check below refuses it.
    n = n * 10 + d;
  }
  return Number.isSafeInteger(n) ? n : undefined;
};

const MARKET_CHARS = new Uint8Array(128);
for (const c of 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._:-') MARKET_CHARS[c.charCodeAt(0)] = 1;

/** [A-Za-z0-9._:-]{1,64}, checked where it is written: nothing is cut out. */
export const MARKET_ID_AT: IdRule<true> = (text, start, end) => {
  if (end <= start || end - start > 64) return undefined;
  for (let i = start; i < end; i++) {
    const c = text.charCodeAt(i);
    if (c >= 128 || MARKET_CHARS[c] === 0) return undefined;
  }
  return true;
};

export function isMarketId(v: unknown): v is string {
  return typeof v === 'string' && MARKET_ID_AT(v, 0, v.length) === true;
}

export function isPositiveId(v: unknown): v is number {
  return typeof v === 'number' && Number.isSafeInteger(v) && v > 0;
}
