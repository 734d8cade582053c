import type { Test } from 'tap';
import { request } from 'node:http';
import { loadConfig } from '../../src/config.js';
import { createLogger } from '../../src/log.js';
import { startService, type Service, type ServiceOptions } from '../../src/service.js';
import { demoDatabase, migratedDatabase } from './db.js';
import { waitFor } from './wait.js';

export interface TestService extends Service {
  readonly databaseUrl: string;
}

/** Each running test service's metrics URL by its public URL, so a helper given either finds `/metrics`. */
const metricsUrls = new Map<string, string>();

/** The metrics listener of the test service at `url`; `url` itself when it is none (it may be one already). */
export const metricsUrlOf = (url: string): string => metricsUrls.get(url) ?? url;

/**
 * The real service, in this process, on a free port, over a fresh migrated database
 * holding the demo data unless told otherwise (copied from the run's template: see demoDatabase). Stopped when the test ends.
 * Every scrape renders afresh (METRICS_CACHE_MS=0), so a scrape right after
 * an action sees it; no `clock` frames are sent unless asked (WS_CLOCK_MS). The record is off
 * (RECORD=off) unless a test turns it on: what it writes is test/record's to judge, and the other
 * files' databases stay as small as they were. With `opts.clock` (a FakeClock started at
 * Date.now()), every limit and timer of the service waits for the test to move it: a rate
 * refills, a silence passes, a heartbeat falls due exactly when the test says.
 */
export async function startTestService(t: Test, env: Record<string, string> = {}, databaseUrl?: string, opts: Pick<ServiceOptions, 'clock'> = {}): Promise<TestService> {
  const url = databaseUrl ?? (await ((env.DEMO_DATA ?? 'on') === 'on' ? demoDatabase(t) : migratedDatabase(t)));
  // No clock frames unless a test asks for them (WS_CLOCK_MS): a frame a second would land among the frames most tests compare.
  const config = loadConfig({ HOST: '127.0.0.1', PORT: '0', DATABASE_URL: url, DEMO_DATA: 'on', SIMULATOR: 'off', DRAIN_DELAY_MS: '0', METRICS_CACHE_MS: '0', WS_CLOCK_MS: '0', RECORD: 'off', ...env });
  const log = createLogger(process.env.TEST_LOG === 'debug' ? 'debug' : 'error', false, (l) => process.stderr.write(l));
  const service = await startService(config, url, log, opts);
  metricsUrls.set(service.url, service.metricsUrl);
  t.teardown(async () => {
    await service.close();
    metricsUrls.delete(service.url);
  });
  return Object.assign(Object.create(service) as Service, service, { databaseUrl: url });
}

export interface Reply<T = unknown> {
  status: number;
  headers: Headers;
  body: T;
  text: string;
}

/** A request over real HTTP; the body is parsed as JSON when it is JSON. */
export async function http<T = unknown>(base: string, path: string, init: RequestInit = {}): Promise<Reply<T>> {
  const res = await fetch(base + path, init);
  const text = await res.text();
  let body: unknown = text;
  try {
    body = JSON.parse(text);
  } catch {
    // not JSON: tests look at text
  }
  return { status: res.status, headers: res.headers, body: body as T, text };
}

/** What fetch will not do: name another Host (fetch always sends the URL's), or leave from another local address. */
export interface RawInit {
  method?: string;
  headers?: Record<string, string>;
  body?: string;
  localAddress?: string;
}

/** A request over node:http; the body is parsed as JSON when it is JSON. */
export function raw<T = unknown>(base: string, path: string, init: RawInit = {}): Promise<Reply<T>> {
  return new Promise((resolve, reject) => {
    const req = request(base + path, { method: init.method ?? 'GET', headers: init.headers, localAddress: init.localAddress, agent: false }, (res) => {
      let text = '';
      res.setEncoding('utf8').on('data', (s: string) => (text += s)).on('end', () => {
        const headers = new Headers();
        for (const [k, v] of Object.entries(res.headers)) if (typeof v === 'string') headers.set(k, v);
        let body: unknown = text;
        try {
          body = JSON.parse(text);
        } catch {
          // not JSON: tests look at text
        }
        resolve({ status: res.statusCode ?? 0, headers, body: body as T, text });
      });
    });
    req.on('error', reject);
    req.end(init.body);
  });
}

export function postJson<T = unknown>(base: string, path: string, body: unknown): Promise<Reply<T>> {
  return http<T>(base, path, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
}

/**
 * A key made through the pool is live on the service once its NOTIFY has been applied: waits for
 * that. Until then the key is wrong (401), and past the wrong-key burst throttled (429).
 */
export function keyLive(base: string, token: string, ms = 30_000): Promise<void> {
  const known = async () => ![401, 429].includes((await http(base, '/api/v1/sports', { headers: { 'x-api-key': token } })).status);
  return waitFor(known, `the new key ${token.split("_")[1]} served by ${base}`, ms, 50);
}
