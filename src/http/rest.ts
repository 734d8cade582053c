import type { HttpRequest, HttpResponse, TemplatedApp } from 'uWebSockets.js';
import { HttpError, errors } from '../errors.js';
import { MAX_IDS, isMarketId, parsePositiveId } from '../refdata/ids.js';
import type { ReadModel } from '../refdata/model.js';
import type { Logger } from '../log.js';
import { isUnavailable } from '../db/pool.js';
import { Exchange, parseJson, parseQuery, queryIds, send, sendError } from './request.js';

export interface Subscriptions {
  subscribe(client: string, mids: readonly string[]): Promise<void>;
  unsubscribe(client: string, mids: readonly string[]): Promise<void>;
}

export interface RestDeps {
  model: ReadModel;
  subscriptions: Subscriptions;
  maxBodyBytes: number;
  log: Logger;
  /** Undefined when ready, else why not. */
  notReady(): string | undefined;
}

const HEALTH = JSON.stringify({ message: 'Server is running' });
const READY = JSON.stringify({ message: 'ready' });
const marketId = (s: string): string | undefined => (isMarketId(s) ? s : undefined);
const INTEGERS = 'positive integers';
const MARKET_IDS = 'market IDs matching [A-Za-z0-9._:-]{1,64}';
/** Where the interface names no client (auth off), every caller is this one. */
const PUBLIC = 'public';

/** Wraps a synchronous handler: any thrown HttpError becomes its answer, anything else a 500. */
function sync(log: Logger, fn: (res: HttpResponse, req: HttpRequest) => void) {
  return (res: HttpResponse, req: HttpRequest): void => {
    try {
      fn(res, req);
    } catch (err) {
      if (!(err instanceof HttpError)) log.error('request failed', { url: req.getUrl(), err: String(err) });
      sendError(res, err instanceof HttpError ? err : errors.internal());
    }
  };
}

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

export function registerRest(app: TemplatedApp, deps: RestDeps): void {
  const { model, log } = deps;

  app.get('/health', (res) => send(res, 200, HEALTH));
  app.get('/ready', (res) => {
    const why = deps.notReady();
    if (why) sendError(res, errors.notReady(why));
    else send(res, 200, READY);
  });

  app.get('/api/v1/sports', (res) => send(res, 200, model.sportsJson()));

  app.get('/api/v1/sports/events', sync(log, (res, req) => {
    const q = parseQuery(req.getQuery());
    const sis = queryIds(q, 'si', parsePositiveId, INTEGERS, true);
    const lis = queryIds(q, 'li', parsePositiveId, INTEGERS, false);
    const leagues = lis && new Set(lis);
    send(res, 200, '{"data":{' + sis.map((si) => `"${si}":${model.eventsJson(si, leagues)}`).join(',') + '}}');
  }));

  app.get('/api/v1/events/markets', sync(log, (res, req) => {
    const eids = queryIds(parseQuery(req.getQuery()), 'eid', parsePositiveId, INTEGERS, true);
    send(res, 200, '{"data":{' + eids.map((eid) => `"${eid}":${model.marketsJson(eid)}`).join(',') + '}}');
  }));

  app.get('/api/v1/markets/result', sync(log, (res, req) => {
    const mids = queryIds(parseQuery(req.getQuery()), 'mid', marketId, MARKET_IDS, true);
    const found: string[] = [];
    for (const mid of mids) {
      const json = model.resultJson(mid);
      if (json !== undefined) found.push(json);
    }
    send(res, 200, '[' + found.join(',') + ']');
  }));

  const change = (verb: 'Subscribed' | 'Unsubscribed', act: (client: string, mids: string[]) => Promise<void>) =>
    (res: HttpResponse, req: HttpRequest): void => {
      const ex = new Exchange(res);
      const body = ex.body(req, deps.maxBodyBytes, ['application/json']);
      void (async () => {
        try {
          const mids = marketList(parseJson(await body));
          await act(PUBLIC, mids);
          ex.reply(200, JSON.stringify({ status: 1, message: `${verb} from market ${mids.join(',')}` }));
        } catch (err) {
          if (err instanceof HttpError) return ex.fail(err);
          if (isUnavailable(err)) return ex.fail(errors.databaseDown());
          log.error('subscription change failed', { err: String(err) });
          ex.fail(errors.internal());
        }
      })();
    };
  app.post('/api/v1/subscribe', change('Subscribed', (c, m) => deps.subscriptions.subscribe(c, m)));
  app.post('/api/v1/unsubscribe', change('Unsubscribed', (c, m) => deps.subscriptions.unsubscribe(c, m)));
}

/** Every route and its method, for the 405 answers. */
export const ROUTES: Readonly<Record<string, string>> = {
  '/health': 'GET', '/ready': 'GET', '/api/v1/sports': 'GET', '/api/v1/sports/events': 'GET',
  '/api/v1/events/markets': 'GET', '/api/v1/markets/result': 'GET', '/api/v1/subscribe': 'POST',
  '/api/v1/unsubscribe': 'POST', '/api/v1/ingest': 'POST',
};

/** Socket routes: a request that is not a WebSocket upgrade falls through uWS to here. */
export const SOCKET_ROUTES: readonly string[] = ['/ws', '/ingest'];

/** 405 with Allow for a known path and another method, 404 for any other path. Registered last. */
export function registerFallbacks(app: TemplatedApp, routes: Readonly<Record<string, string>>, sockets: readonly string[]): void {
  for (const path of sockets) app.any(path, (res) => sendError(res, errors.notWebSocket(path)));
  for (const [path, allowed] of Object.entries(routes)) {
    app.any(path, (res, req) => sendError(res, errors.methodNotAllowed(req.getCaseSensitiveMethod(), path, allowed)));
  }
  app.any('/*', (res, req) => sendError(res, errors.notFound(req.getUrl())));
}
