import { errors } from '../errors.js';
import { MARKET_ID_AT, MAX_IDS, POSITIVE_ID, isMarketId } from '../refdata/ids.js';
import type { ReadModel } from '../refdata/model.js';
import { parseJson, parseQuery, queryIdPlaces, queryIds, type IdPlaces, type Query } from './request.js';
import type { Router } from './router.js';
import type { HttpRequest } from 'uWebSockets.js';
import { AnswerCache, Pieces } from './cache.js';
import type { Principal } from '../auth/auth.js';
import type { ReadyProbe } from './readiness.js';

interface StoredSets {
  subscribe(client: string, mids: readonly string[]): Promise<void>;
  unsubscribe(client: string, mids: readonly string[]): Promise<void>;
}

interface RestDeps {
  model: ReadModel;
  subscriptions: StoredSets;
  maxBodyBytes: number;
  /** Bytes the answer cache may hold, keys included. */
  answerCacheBytes: number;
  readiness: ReadyProbe;
}

/** A read request, checked: the key of its answer (the normalised query) and how to build the answer. */
interface Lookup {
  key: string;
  answer(): Pieces;
}

const HEALTH = Buffer.from(JSON.stringify({ message: 'Server is running' }));
const READY = Buffer.from(JSON.stringify({ message: 'ready' }));
const [OPEN_DATA, CLOSE_DATA, OPEN_LIST, CLOSE_LIST] = ['{"data":{', '}}', '[', ']'].map((s) => Buffer.from(s));
const INTEGERS = 'positive integers';
/** Reading the reference data and changing one's own market set: what a subscriber key may do. */
const READ = 'subscriber';
const MARKET_IDS = 'market IDs matching [A-Za-z0-9._:-]{1,64}';
/** The cached routes, which share the cache's budget for raw queries. */
const READ_ROUTES = 4;

/** The `data` array of a subscribe or unsubscribe body: 1 to 50 market IDs, duplicates collapsed. */
function marketList(body: unknown): string[] {
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

/** Liveness and readiness, for Kubernetes' probes: on the public port and on the metrics port. */
export function registerProbes(router: Router, readiness: ReadyProbe): void {
  router.get('/health', () => HEALTH);
  router.get('/ready', () => {
    const why = readiness.notReady();
    if (why) throw errors.notReady(why);
    return READY;
  });
}

/** The element for the ID written in `text` from `start` to `end`, or undefined for none. */
type ElementAt = (text: string, start: number, end: number) => string | undefined;

/** `[<element>,...]`: each ID's element, in order, those without one left out; one string, concatenated as it goes (no array of them, no join). */
function listOf(ids: IdPlaces, json: ElementAt): Pieces {
  let out = '';
  ids.each((text, start, end) => {
    const element = json(text, start, end);
    if (element !== undefined) out = out ? out + ',' + element : element;
  });
  return new Pieces().add(OPEN_LIST).add(out).add(CLOSE_LIST);
}

/** `{"data":{"<id>":<array>,...}}`, in the order of the request. */
function dataOf(ids: readonly number[], json: (id: number) => Buffer | string): Pieces {
  const out = new Pieces().add(OPEN_DATA);
  ids.forEach((id, i) => out.add((i ? ',"' : '"') + id + '":').add(json(id)));
  return out.add(CLOSE_DATA);
}

/** A POST that changes the caller's stored market set: only ever the caller's own set and sockets, the client coming from the key, never the request. */
function storedSetChange(verb: 'Subscribed' | 'Unsubscribed', act: (client: string, mids: string[]) => Promise<void>) {
  return async (body: Buffer, _type: string, who: Principal): Promise<string> => {
    const mids = marketList(parseJson(body));
    await act(who.client, mids);
    return JSON.stringify({ status: 1, message: `${verb} from market ${mids.join(',')}` });
  };
}

/** The REST contract's routes (docs/rest.md) plus the probes. Reads never wait on Postgres. */
export function registerRest(router: Router, deps: RestDeps): void {
  const { model } = deps;

  registerProbes(router, deps.readiness);

  router.get('/api/v1/sports', () => model.sportsJson(), READ);

  const cache = new AnswerCache(deps.answerCacheBytes);
  /**
   * Answers a read route from the cache. A query seen before maps straight to
   * its answer; a new one is parsed and checked first (errors are never kept),
   * and its answer built only if no equivalent request left one.
   */
  const cached = (check: (q: Query, raw: string) => Lookup) => {
    const aliases = cache.aliases(READ_ROUTES);
    return (req: HttpRequest): Buffer => {
      const raw = req.getQuery() ?? '';
      const version = model.version;
      const seen = aliases.get(raw);
      if (seen?.view && seen.version === version) return seen.view;
      const lookup = check(parseQuery(raw), raw);
      const kept = cache.get(lookup.key, version) ?? cache.put(lookup.key, version, lookup.answer());
      if (Buffer.isBuffer(kept)) return kept;
      aliases.set(raw, kept);
      return kept.view!;
    };
  };

  router.get('/api/v1/sports/events', cached((q, raw) => {
    const sis = queryIds(q, raw, 'si', POSITIVE_ID, INTEGERS, true);
    const lis = queryIds(q, raw, 'li', POSITIVE_ID, INTEGERS, false);
    const leagues = lis && new Set(lis.list);
    return {
      // The answer depends on the leagues as a set: sorted, so their order and repeats do not matter.
      key: leagues ? `${sis.key}&li=${[...leagues].sort((a, b) => a - b).join(',')}` : sis.key,
      answer: () => dataOf(sis.list, (si) => model.eventsJson(si, leagues)),
    };
  }), READ);

  router.get('/api/v1/events/markets', cached((q, raw) => {
    const eids = queryIds(q, raw, 'eid', POSITIVE_ID, INTEGERS, true);
    return {
      key: eids.key,
      answer: () => dataOf(eids.list, (eid) => model.marketsJson(eid)),
    };
  }), READ);

  /**
   * A JSON array of each requested market's element, in the order of the request, unknown markets
   * left out. Routes that take the same parameter keep their answers apart by `route`.
   */
  const byMarket = (route: string, json: ElementAt) => cached((q, raw) => {
    const mids = queryIdPlaces(q, raw, 'mid', MARKET_ID_AT, MARKET_IDS);
    return {
      key: route + mids.key,
      answer: () => listOf(mids, json),
    };
  });

  // Read where the query writes them: the most IDs of any route, and the one polled for settlement.
  router.get('/api/v1/markets/result', byMarket('', (text, start, end) => model.resultJsonAt(text, start, end)), READ);
  // Beside the contract's routes: what its result keys cannot carry (docs/rest.md#market-terms).
  router.get('/api/v1/markets/terms', byMarket('terms?', (text, start, end) => {
    const terms = model.termsOf(text.slice(start, end));
    return terms && JSON.stringify(terms);
  }), READ);

  router.post('/api/v1/subscribe', ['application/json'], deps.maxBodyBytes, storedSetChange('Subscribed', (c, m) => deps.subscriptions.subscribe(c, m)), READ);
  router.post('/api/v1/unsubscribe', ['application/json'], deps.maxBodyBytes, storedSetChange('Unsubscribed', (c, m) => deps.subscriptions.unsubscribe(c, m)), READ);
}
