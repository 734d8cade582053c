import { createHash, timingSafeEqual } from 'node:crypto';
import { errors } from '../errors.js';
import { registerProbes } from './rest.js';
import type { Router } from './router.js';
import type { ReadyProbe } from './readiness.js';

/** The Prometheus exposition (one render shared by the scrapes that come together) and its content type. */
export interface Exposition {
  exposition(): Promise<Buffer>;
  readonly contentType: string;
}

interface MetricsDeps {
  metrics: Exposition;
  /** The bearer token a scrape must show; undefined: none. */
  token: string | undefined;
  readiness: ReadyProbe;
  /** Where the metrics listener is, for the public port's pointer to it: its port once bound, 0 before. */
  listening: { readonly metricsPort: number };
}

const digest = (text: string): Buffer => createHash('sha256').update(text).digest();
/** The token of an `Authorization: Bearer <token>` header ('' for any other); the scheme's case does not matter (RFC 7235). */
const bearer = (header: string): string => (/^bearer +/i.test(header) ? header.replace(/^bearer +/i, '') : '');

/**
 * The scrape lives on a listener of its own (METRICS_PORT, on loopback unless
 * METRICS_HOST opens it), never on the public port: what it tells (traffic
 * by route, sockets, pool, versions) is for the operator, and a port of its
 * own lets a NetworkPolicy open it to Prometheus alone. With METRICS_TOKEN
 * set, `/metrics` answers only a scrape that shows it as a bearer token
 * (compared in constant time); the probes answer there too, with no token,
 * as on the public port. The public port answers `/metrics` with a 404 that
 * says where to look.
 */
export function registerMetrics(publicRouter: Router, metricsRouter: Router, deps: MetricsDeps): void {
  publicRouter.get('/metrics', () => {
    throw errors.metricsElsewhere(String(deps.listening.metricsPort || 'not listening'));
  });
  const want = deps.token === undefined ? undefined : digest(deps.token);
  metricsRouter.getAsync('/metrics', async (req) => {
    if (want && !timingSafeEqual(digest(bearer(req.getHeader('authorization'))), want)) throw errors.metricsToken();
    return { body: await deps.metrics.exposition(), type: deps.metrics.contentType };
  });
  registerProbes(metricsRouter, deps.readiness);
  metricsRouter.fallbacks([]);
}
