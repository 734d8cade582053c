import { errors } from '../errors.js';
import { registerProbes } from './rest.js';
import type { Router } from './router.js';

interface MetricsDeps {
  /** The Prometheus exposition and its content type. */
  text(): Promise<string>;
  contentType: string;
  notReady(): string | undefined;
  /** Where the metrics listener is, for the public port's pointer to it: its port once bound. */
  port(): number | undefined;
}

/**
 * The scrape lives on a listener of its own (METRICS_PORT), never on the
 * public port: what it tells (traffic by route, sockets, pool, versions) is
 * for the operator, and a port of its own lets a NetworkPolicy open it to
 * Prometheus alone. The probes answer there too. The public port answers
 * `/metrics` with a 404 that says where to look.
 */
export function registerMetrics(publicRouter: Router, metricsRouter: Router, deps: MetricsDeps): void {
  publicRouter.get('/metrics', () => {
    throw errors.metricsElsewhere(String(deps.port() ?? 'not listening'));
  });
  metricsRouter.getAsync('/metrics', async () => ({ body: await deps.text(), type: deps.contentType }));
  registerProbes(metricsRouter, deps.notReady);
  metricsRouter.fallbacks([]);
}
