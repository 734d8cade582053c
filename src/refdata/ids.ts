/** The ID rules shared by REST parameters, request bodies, socket messages and ingest. */
export const MARKET_ID = /^[A-Za-z0-9._:-]{1,64}$/;
const POSITIVE_INT = /^[1-9][0-9]{0,15}$/;
export const MAX_IDS = 50;

export function isMarketId(v: unknown): v is string {
  return typeof v === 'string' && MARKET_ID.test(v);
}

export function isPositiveId(v: unknown): v is number {
  return typeof v === 'number' && Number.isSafeInteger(v) && v > 0;
}

/** Parses a positive integer written in decimal, or returns undefined. */
export function parsePositiveId(text: string): number | undefined {
  if (!POSITIVE_INT.test(text)) return undefined;
  const n = Number(text);
  return Number.isSafeInteger(n) ? n : undefined;
}
