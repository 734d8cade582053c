import type { WireEvent as Event, WireMarket as Market, WireResult as MarketResult, WireSport as Sport } from '../refdata/wire.js';
import { retry } from '../lib/retry.js';
import { MAX_IDS } from '../refdata/ids.js';

/** A REST answer that was not a 2xx: the server's own message, and its status. */
export class ApiError extends Error {
  constructor(readonly status: number, message: string) {
    super(message);
  }
}

/** Not worth asking again: the request or its key is wrong, not the server's state. */
const final = (err: unknown): boolean => err instanceof ApiError && err.status < 500 && err.status !== 429;

/**
 * The reference data routes, with the API key (when the page has one) as the
 * `x-api-key` header. Server errors and network failures are retried with
 * backoff until they pass or the caller stops caring; refusals are thrown.
 */
export class Api {
  constructor(private readonly key: string | undefined, private readonly retrying: (err: unknown) => void) {}

  sports(): Promise<Sport[]> {
    return this.get('/api/v1/sports');
  }

  async events(si: number, cancelled: () => boolean): Promise<Event[]> {
    return (await this.get<{ data: Record<string, Event[]> }>(`/api/v1/sports/events?si=${si}`, cancelled)).data[si] ?? [];
  }

  async markets(eid: number, cancelled: () => boolean): Promise<Market[]> {
    return (await this.get<{ data: Record<string, Market[]> }>(`/api/v1/events/markets?eid=${eid}`, cancelled)).data[eid] ?? [];
  }

  /** Results of up to the first MAX_IDS of these markets (the route's limit); the board shows the newest few anyway. */
  results(mids: string[], cancelled: () => boolean): Promise<MarketResult[]> {
    if (!mids.length) return Promise.resolve([]);
    return this.get(`/api/v1/markets/result?mid=${mids.slice(0, MAX_IDS).map(encodeURIComponent).join(',')}`, cancelled);
  }

  private get<T>(path: string, cancelled: () => boolean = () => false): Promise<T> {
    return retry(async () => {
      const res = await fetch(path, { headers: this.key ? { 'x-api-key': this.key } : {} });
      const body = (await res.json().catch(() => undefined)) as { message?: string } | undefined;
      if (!res.ok) throw new ApiError(res.status, body?.message ?? `HTTP ${res.status}`);
      return body as T;
    }, { minMs: 500, maxMs: 10_000, cancelled, retryIf: (err) => !final(err), onRetry: this.retrying });
  }
}
