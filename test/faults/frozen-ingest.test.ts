import t from 'tap';
import pg from 'pg';
import { postJson, startTestService } from '../helpers/service.js';
import { Client, image } from '../helpers/ws.js';
import { captureErrorLogs, eventually, postInit, timedFetch, type Timed } from './lib.js';
import { ownPostgres } from './own-postgres.js';
import { Publisher, type IngestAck } from './publisher-socket.js';

/**
 * Odds for a market the read model does not hold are checked against
 * Postgres before they are refused as unknown. With Postgres frozen (every
 * process SIGSTOPped: connections open, nothing answers) that check cannot be
 * made: the publisher must hear "the database is unavailable" (503, ack status
 * 0), never a 400 "market ... is not known", while odds of markets the model
 * already holds go on being published. What bounds the wait is the service's
 * statement timeout (1 s here) and its client's read timeout: the answer comes
 * from them, and a frozen wait fails this test's own bound, saying so.
 */
const BOUND_MS = 20_000;
const KNOWN = '1.200001001'; // a demo market: in the read model
const HIDDEN = 'fz.1'; // in Postgres, but not (yet) in the read model
const NOWHERE = 'fz.nowhere';
const UNAVAILABLE = 'the database is unavailable; nothing was changed, try again';

const errorLogs = captureErrorLogs(t);
const own = await ownPostgres(t);
const svc = await startTestService(t, { PG_STATEMENT_TIMEOUT_MS: '1000', PG_CONNECT_TIMEOUT_MS: '500' }, own.url);
t.teardown(() => own.thaw()); // runs before the service closes: its shutdown needs Postgres to answer

// Written with triggers off (session_replication_role = replica): no NOTIFY, so the model does not learn of it.
const db = new pg.Client({ connectionString: own.url });
await db.connect();
await db.query('SET session_replication_role = replica');
await db.query(`INSERT INTO markets (mid, eid, na, ty, has_r) VALUES ($1, 30000001, 'Hidden Market', 'match-odd', true)`, [HIDDEN]);
await db.query(`INSERT INTO runners (mid, rid, pos, na) VALUES ($1, 1, 0, 'A'), ($1, 2, 1, 'B')`, [HIDDEN]);
await db.end();
if (svc.model.typeOf(HIDDEN) !== undefined) throw new Error('setup: the read model already knows the hidden market');

const sub = await Client.connect(svc.url);
t.teardown(() => sub.close());
await sub.request({ op: 'subscribe', mids: [KNOWN, HIDDEN] });
const pub = await Publisher.open(svc.url);
t.teardown(() => pub.close());

const ingest = (...items: Record<string, unknown>[]) => timedFetch(`${svc.url}/api/v1/ingest`, postInit({ data: items }), BOUND_MS);
const sendAck = async (id: number, items: Record<string, unknown>[]): Promise<IngestAck> => {
  pub.send(id, items);
  return pub.ack(id, BOUND_MS);
};

let hiddenHttp: Timed;
let knownHttp: Timed;
let knownFrameAt = 0;
let hiddenAck: IngestAck;
let knownAck: IngestAck;
let knownSocketFrame = false;
own.freeze();
try {
  const pending = ingest(image(HIDDEN, 2.2));
  knownHttp = await ingest(image(KNOWN, 3.3));
  await sub.next((f) => f.op === 'odds' && f.mid === KNOWN && f.r[0].b[0][0] === 3.3, BOUND_MS);
  knownFrameAt = Date.now();
  hiddenAck = await sendAck(1, [image(HIDDEN, 2.3)]);
  knownAck = await sendAck(2, [image(KNOWN, 3.4)]);
  knownSocketFrame = !!(await sub.next((f) => f.op === 'odds' && f.mid === KNOWN && f.r[0].b[0][0] === 3.4, BOUND_MS).catch(() => undefined));
  hiddenHttp = await pending;
} finally {
  own.thaw();
}

t.test('with Postgres frozen, HTTP odds for a market new to the read model answer 503 "database unavailable", by the statement timeout', async (t) => {
  t.equal(hiddenHttp.status, 503, `${hiddenHttp.status || hiddenHttp.error} after ${hiddenHttp.ms} ms: ${hiddenHttp.text}`);
  t.same(JSON.parse(hiddenHttp.text || '{}'), { status: 0, message: UNAVAILABLE });
  t.notMatch(hiddenHttp.text, /not known/, 'never blamed on the publisher');
});

t.test('with Postgres frozen, the same batch on the /ingest socket is acked with status 0 and the same message', async (t) => {
  t.same({ id: hiddenAck.id, status: hiddenAck.status, message: hiddenAck.message }, { id: 1, status: 0, message: UNAVAILABLE });
});

t.test('with Postgres frozen, odds of a market the model knows are still published, over HTTP and the socket', async (t) => {
  t.equal(knownHttp.status, 200, knownHttp.text);
  t.same(JSON.parse(knownHttp.text || '{}'), { status: 1, message: 'Ingested 1 item' });
  t.ok(knownFrameAt < hiddenHttp.endedAt, 'published while the batch of the new market was still waiting on Postgres');
  t.same({ id: knownAck.id, status: knownAck.status, message: knownAck.message }, { id: 2, status: 1, message: 'Ingested 1 item' });
  t.ok(knownSocketFrame, 'the subscriber got the socket batch\'s image');
});

t.test('after SIGCONT, odds for the market new to the read model are accepted and published, on both routes', async (t) => {
  const r = await eventually(() => postJson<{ status: number; message: string }>(svc.url, '/api/v1/ingest', { data: [image(HIDDEN, 2.4)] }), (r) => r.status === 200, 15000, 100);
  t.same(r.body, { status: 1, message: 'Ingested 1 item' });
  const frame = await sub.next((f) => f.op === 'odds' && f.mid === HIDDEN && f.r[0].b[0][0] === 2.4);
  t.equal(frame.op, 'odds');
  t.same(await sendAck(3, [image(HIDDEN, 2.5)]).then((a) => ({ id: a.id, status: a.status })), { id: 3, status: 1 });
  await sub.next((f) => f.op === 'odds' && f.mid === HIDDEN && f.r[0].b[0][0] === 2.5);
  t.same(sub.oddsOf(HIDDEN).map((f) => f.r[0].b[0][0]), [2.4, 2.5], 'nothing of the refused batches was published');
});

t.test('after SIGCONT, an image of a market Postgres does not hold is refused alone as unknown, on both routes', async (t) => {
  const r = await postJson<{ status: number; message: string }>(svc.url, '/api/v1/ingest', { data: [image(NOWHERE)] });
  t.equal(r.status, 200);
  const refused = [{ i: 0, mid: NOWHERE, message: `item 0 (odds ${NOWHERE}): market ${NOWHERE} is not known` }];
  t.same(r.body, { status: 1, message: 'Ingested 0 items; refused 1', refused });
  const ack = await sendAck(4, [image(NOWHERE)]);
  t.same({ id: ack.id, status: ack.status, message: ack.message, refused: ack.refused }, { id: 4, status: 1, message: r.body.message, refused });
});

t.test('nothing was logged as an error', async (t) => {
  t.same(errorLogs, []);
});
