/**
 * The messages of the exchange's stream protocol that this client sends, and
 * the connection and status messages it reads, with the exchange's own key
 * names. Market changes are typed with the translator's (../stream.ts); the
 * client reads only their header, and checks nothing else of them: the
 * translator does.
 */
import type { MarketChangeMessage } from '../stream.js';
import { StreamError } from './errors.js';

/** Which markets: the exchange ANDs the lists it is given. */
export interface MarketFilter {
  marketIds?: string[];
  eventTypeIds?: string[];
  eventIds?: string[];
  marketTypes?: string[];
  countryCodes?: string[];
}

/** What of each market: best offers to a ladder depth, traded volumes, last price, the definition. */
export interface MarketDataFilter {
  fields: string[];
  ladderLevels?: number;
}

export const DEFAULT_DATA_FILTER: Readonly<MarketDataFilter> = Object.freeze({
  fields: ['EX_BEST_OFFERS', 'EX_TRADED', 'EX_TRADED_VOL', 'EX_LTP', 'EX_MARKET_DEF'],
  ladderLevels: 10,
});

/** The exchange's bounds for the heartbeat it sends on a quiet subscription. */
export const HEARTBEAT_MS = { min: 500, max: 30_000, default: 5000 } as const;
/** The exchange's bounds for conflating changes; without one it picks its own. */
export const CONFLATE_MS = { min: 0, max: 120_000 } as const;

interface ConnectionMessage {
  op: 'connection';
  connectionId?: string;
}

export interface StatusMessage {
  op: 'status';
  id?: number;
  statusCode?: 'SUCCESS' | 'FAILURE';
  errorCode?: string;
  errorMessage?: string;
  connectionClosed?: boolean;
  connectionId?: string;
  connectionsAvailable?: number;
}

export type ExchangeMessage = ConnectionMessage | StatusMessage | MarketChangeMessage;

const KNOWN_OPS = new Set(['connection', 'status', 'mcm']);

/**
 * One line as a message, or a StreamError saying what is wrong with it.
 * Unknown ops (order changes, race data, ops added later) come back as
 * undefined: the client ignores them rather than dropping the stream.
 */
export function parseLine(line: string): ExchangeMessage | undefined {
  let value: unknown;
  try {
    value = JSON.parse(line);
  } catch (err) {
    throw new StreamError('BAD_JSON', `the stream sent a line that is not JSON (${(err as Error).message}): ${preview(line)}`);
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new StreamError('BAD_MESSAGE', `the stream sent a line that is not a JSON object: ${preview(line)}`);
  const op = (value as { op?: unknown }).op;
  if (typeof op !== 'string') throw new StreamError('BAD_MESSAGE', `the stream sent a message without a string "op": ${preview(line)}`);
  if (!KNOWN_OPS.has(op)) return undefined;
  const mc = (value as { mc?: unknown }).mc;
  if (op === 'mcm' && mc !== undefined && mc !== null && !Array.isArray(mc)) throw new StreamError('BAD_MESSAGE', `the stream sent an mcm whose "mc" is not an array: ${preview(line)}`);
  return value as ExchangeMessage;
}

const preview = (line: string): string => (line.length > 120 ? `${line.slice(0, 120)}... (${line.length} characters)` : line);

export interface SubscriptionRequest {
  op: 'marketSubscription';
  id: number;
  marketFilter: MarketFilter;
  marketDataFilter: MarketDataFilter;
  segmentationEnabled: true;
  heartbeatMs: number;
  conflateMs?: number;
  initialClk?: string;
  clk?: string;
}

export const authentication = (id: number, appKey: string, session: string) => ({ op: 'authentication', id, appKey, session });

export const heartbeat = (id: number) => ({ op: 'heartbeat', id });
