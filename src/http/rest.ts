import { errors } from '../errors.js';
import { MAX_IDS, isMarketId, parsePositiveId } from '../refdata/ids.js';
import type { ReadModel } from '../refdata/model.js';
import { isUnavailable } from '../db/pool.js';
import { parseJson, parseQuery, queryIds } from './request.js';
import type { Router } from './router.js';
import type { HttpRequest } from 'uWebSockets.js';
import { AnswerCache } from './cache.js';
import type { Principal } from '../auth/auth.js';

export interface Subscriptions {
  subscribe(client: string, mids: readonly string[]): Promise<void>;
  unsubscribe(client: string, mids: readonly string[]): Promise<void>;
}

export interface RestDeps {
  model: ReadModel;
  subscriptions: Subscriptions;
  maxBodyBytes: number;
  /** Undefined when ready, else why not. */
  notReady(): string | undefined;
}

const HEALTH = JSON.stringify({ message: 'Server is running' });
const READY = JSON.stringify({ message: 'ready' });
const marketId = (s: string): string | undefined => (isMarketId(s) ? s : undefined);
const INTEGERS = 'positive integers';
/** Reading the reference data and changing one's own market set: what a subscriber key may do. */
const READ = 'subscriber';
const MARKET_IDS = 'market IDs matching [A-Za-z0-9._:-]{1,64}';

/** The `data` array of a subscribe or unsubscribe body: 1 to 50 market IDs, duplicates collapsed. */
export function marketList(body: unknown): string[] {
  const data = (body as { data?: unknown } | null)?.data;
  if (!body || typeof body !== 'object' || Array.isArray(body) || !Array.isArray(data)) {
    throw errors.badBody('must be a JSON object {"data": ["<market ID>", ...]}');
  }
  if (data.length === 0 || data.length > MAX_IDS) throw errors.badParam('data', `must list 1 to ${MAX_IDS} market IDs, got ${data.length}`);
  for (const [i, v] of data.entries()) {
    if (!isMarketId(v)) throw errors.badParam(`data[${i}]`, `must be a market ID string matching [A-Za-z0-9._:-]{1,64}`);
  }
  return [...new Set(data as string[])];
}

/** The interface's routes (spec section 4) plus readiness. Reads never wait on Postgres. */
export function registerRest(router: Router, deps: RestDeps): void {
  const { model } = deps;

  router.get('/health', () => HEALTH);
  router.get('/ready', () => {
    const why = deps.notReady();
    if (why) throw errors.notReady(why);
    return READY;
  });

  router.get('/api/v1/sports', () => model.sportsJson(), READ);

  const cache = new AnswerCache();
  /** Answers a list route from the cache, computing and keeping it on a miss; errors are never kept. */
  const cached = (route: string, compute: (query: string) => string) => (req: HttpRequest): string => {
    const query = req.getQuery() ?? '';
    const key = route + '?' + query;
    const version = model.version;
    let body = cache.get(key, version);
    if (body === undefined) cache.set(key, version, (body = compute(query)));
    return body;
  };

  router.get('/api/v1/sports/events', cached('events', (query) => {
    const q = parseQuery(query);
    const sis = queryIds(q, 'si', parsePositiveId, INTEGERS, true);
    const lis = queryIds(q, 'li', parsePositiveId, INTEGERS, false);
    const leagues = lis && new Set(lis);
    return '{"data":{' + sis.map((si) => `"${si}":${model.eventsJson(si, leagues)}`).join(',') + '}}';
  }), READ);

  router.get('/api/v1/events/markets', cached('markets', (query) => {
    const eids = queryIds(parseQuery(query), 'eid', parsePositiveId, INTEGERS, true);
    return '{"data":{' + eids.map((eid) => `"${eid}":${model.marketsJson(eid)}`).join(',') + '}}';
  }), READ);

  router.get('/api/v1/markets/result', cached('results', (query) => {
    const mids = queryIds(parseQuery(query), 'mid', marketId, MARKET_IDS, true);
    const found: string[] = [];
    for (const mid of mids) {
      const json = model.resultJson(mid);
      if (json !== undefined) found.push(json);
    }
    return '[' + found.join(',') + ']';
  }), READ);

  const change = (verb: 'Subscribed' | 'Unsubscribed', act: (client: string, mids: string[]) => Promise<void>) =>
    async (body: Buffer, _type: string, who: Principal): Promise<string> => {
      const mids = marketList(parseJson(body));
      try {
        // Only ever the caller's own set and sockets: the client comes from the key, never the request.
        await act(who.client, mids);
      } catch (err) {
        if (isUnavailable(err)) throw errors.databaseDown();
        throw err;
      }
      return JSON.stringify({ status: 1, message: `${verb} from market ${mids.join(',')}` });
    };
  router.post('/api/v1/subscribe', ['application/json'], deps.maxBodyBytes, change('Subscribed', (c, m) => deps.subscriptions.subscribe(c, m)), READ);
  router.post('/api/v1/unsubscribe', ['application/json'], deps.maxBodyBytes, change('Unsubscribed', (c, m) => deps.subscriptions.unsubscribe(c, m)), READ);
}
