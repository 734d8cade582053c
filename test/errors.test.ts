/**
 * The one catalogue of coded errors and its HTTP edge: every code has its status, every error's
 * body is the same shape, close codes are distinct, and anything thrown that is not from the
 * catalogue is logged once, as a bug, and answered INTERNAL.
 */
import t from 'tap';
import { readFileSync } from 'node:fs';
import { CLOSE, errors, known, ServiceError, type ErrorCode } from '../src/errors.js';
import { errorBody, httpStatus, STATUS_LINES } from '../src/http/status.js';

t.test('every code of the catalogue answers a status the edge can write, with the one body shape', async (t) => {
  const source = readFileSync(new URL('../../src/errors.ts', import.meta.url), 'utf8');
  const codes = [...new Set([...source.matchAll(/new ServiceError\('([A-Z_]+)'/g)].map((m) => m[1]))];
  t.ok(codes.length >= 15, `${codes.length} codes in the catalogue`);
  for (const code of codes) {
    const err = new ServiceError(code as ErrorCode, 'why');
    const status = httpStatus(err);
    t.ok(STATUS_LINES[status], `${code} answers ${status}`);
    t.same(JSON.parse(errorBody(err)), { status: 0, message: 'why' });
  }
  t.equal(httpStatus(errors.databaseDown()), 503, 'Postgres away: unavailable, never the caller\'s fault');
  t.equal(httpStatus(errors.internal()), 500);
});

t.test('close codes are distinct and each carries its reason', async (t) => {
  const codes = Object.values(CLOSE).map((c) => c.code);
  t.equal(new Set(codes).size, codes.length);
  for (const c of Object.values(CLOSE)) t.ok(c.reason.length > 0 && Buffer.byteLength(c.reason) <= 123, `${c.code}: a reason that fits a close frame`);
});

t.test('a thrown value not from the catalogue is a bug: logged once with where, answered INTERNAL', async (t) => {
  const logged: [string, Record<string, unknown> | undefined][] = [];
  const log = { error: (msg: string, fields?: Record<string, unknown>) => void logged.push([msg, fields]) };
  const own = errors.badBody('is not valid JSON');
  t.equal(known(own, log, 'ingest'), own, 'the catalogue\'s own pass as they are');
  t.same(logged, []);
  t.match(known(new TypeError('boom'), log, 'ingest'), { code: 'INTERNAL' });
  t.match(logged, [['ingest failed', { err: /TypeError: boom/ }]]);
});
