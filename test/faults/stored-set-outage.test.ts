import t, { type Test } from 'tap';
import WebSocket from 'ws';
import { postJson, startTestService } from '../helpers/service.js';
import { Client, image } from '../helpers/ws.js';
import { captureErrorLogs } from './lib.js';
import { ownPostgres } from './own-postgres.js';

/**
 * A socket starts with its client's stored market set, read from Postgres.
 * When Postgres cannot answer as the socket opens (frozen, or down), the
 * socket must be told so (an ack with id 0 and status 0) and then get its
 * stored markets' images once Postgres is back, on the same socket.
 */
const NOT_LOADED = 'your client\'s stored markets could not be loaded yet (the database is unavailable); retrying, they will follow';
const [M1, M2, M3] = ['1.200001001', '1.200001002', '1.200004001'];

const errorLogs = captureErrorLogs(t);
const own = await ownPostgres(t);
const svc = await startTestService(t, { PG_STATEMENT_TIMEOUT_MS: '1000', PG_CONNECT_TIMEOUT_MS: '500' }, own.url);
t.teardown(() => own.thaw()); // runs before the service closes: its shutdown needs Postgres to answer

/** The newest price published for each market: the image a socket must get. */
const newest = new Map<string, number>();
async function publish(mid: string, price: number): Promise<void> {
  const p = await postJson(svc.url, '/api/v1/ingest', { data: [image(mid, price)] });
  if (p.status !== 200) throw new Error(`ingest: ${p.text}`);
  newest.set(mid, price);
}

async function store(mids: string[]): Promise<void> {
  const r = await postJson(svc.url, '/api/v1/subscribe', { data: mids });
  if (r.status !== 200) throw new Error(`subscribe: ${r.text}`);
  for (const mid of mids) await publish(mid, 2.5);
}

/** Opens a socket while Postgres cannot answer; returns it once it was told its stored set did not load. */
async function openDuringOutage(t: Test): Promise<Client> {
  const c = await Client.connect(svc.url);
  t.teardown(() => c.close());
  const told = await c.next((f) => f.op === 'notice', 10000);
  t.same(told, { op: 'notice', status: 0, message: NOT_LOADED }, 'told that its stored markets will follow');
  t.same(c.frames.filter((f) => f.op === 'odds'), [], 'no image yet');
  return c;
}

/** After Postgres is back: every stored market's image arrives on the same socket, after the notice, and live updates follow. */
async function imagesFollow(t: Test, c: Client, mids: string[]): Promise<void> {
  for (const mid of mids) {
    const f = await c.next((f) => f.op === 'odds' && f.mid === mid, 20000);
    t.equal(f.op === 'odds' && f.r[0].b[0][0], newest.get(mid), `the newest image of ${mid} arrived`);
  }
  t.equal(c.ws.readyState, WebSocket.OPEN, 'on the same socket, never reconnected');
  t.equal(c.frames[0].op, 'notice', 'the notice came first');
  const price = newest.get(mids[0])! + 0.1;
  await publish(mids[0], price);
  const live = await c.next((f) => f.op === 'odds' && f.mid === mids[0] && f.r[0].b[0][0] === price);
  t.equal(live.op, 'odds', 'and it takes live updates of them');
}

t.test('Postgres frozen when the socket opens: told, then its stored markets\' images once Postgres answers', async (t) => {
  await store([M1, M2]);
  let c: Client;
  own.freeze();
  try {
    c = await openDuringOutage(t);
  } finally {
    own.thaw();
  }
  await imagesFollow(t, c, [M1, M2]);
});

t.test('Postgres down when the socket opens: told, then its stored markets\' images once Postgres is started again', async (t) => {
  await store([M3]); // also ends the cached copy of the set that the socket above loaded
  await own.stop();
  let c: Client;
  try {
    c = await openDuringOutage(t);
  } finally {
    await own.start();
  }
  await imagesFollow(t, c, [M1, M2, M3]);
});

t.test('nothing was logged as an error', async (t) => {
  t.same(errorLogs, []);
});
