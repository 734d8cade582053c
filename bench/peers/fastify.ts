/**
 * The REST peer a Node team would pick: fastify (its own router and query-string parser) with a
 * `pg` Pool, one query per request, answering the service's routes with the same bytes
 * (bench/baseline/answers.ts, shared with the node:http baseline, so only the framework differs).
 *
 * Env: DATABASE_URL (required), PORT (0 = free port), HOST (127.0.0.1), PG_POOL_MAX (10).
 */
import Fastify from 'fastify';
import { BadRequest, HEALTH, ROUTES, answer, errorBody, openPool } from '../baseline/answers.js';

const pool = openPool('bench-fastify');
const app = Fastify({ logger: false, keepAliveTimeout: 65_000 });

type Query = Record<string, string | string[] | undefined>;
const values = (query: Query, name: string): string[] => {
  const v = query[name];
  return v === undefined ? [] : Array.isArray(v) ? v : [v];
};

app.get('/health', (_req, reply) => {
  reply.type('application/json').send(HEALTH);
});
for (const route of ROUTES) {
  app.get(route, async (req, reply) => {
    const body = await answer(pool, route, (name) => values(req.query as Query, name));
    return reply.type('application/json').send(body);
  });
}
app.setNotFoundHandler((req, reply) => {
  reply.code(404).type('application/json').send(errorBody(`no route for ${req.url.split('?')[0]}`));
});
app.setErrorHandler((err: Error, _req, reply) => {
  reply.code(err instanceof BadRequest ? 400 : 503).type('application/json').send(errorBody(err.message));
});

const host = process.env.HOST || '127.0.0.1';
app.listen({ host, port: Number(process.env.PORT || 0) }).then(
  () => {
    const address = app.server.address() as { port: number };
    process.stdout.write(`fastify listening on http://${host}:${address.port}\n`);
  },
  (err: Error) => {
    process.stderr.write(`fastify failed to start: ${err.message}\n`);
    process.exit(1);
  },
);

const stop = () => {
  void app.close().then(() => pool.end()).finally(() => process.exit(0));
};
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
