import t, { type Test } from 'tap';
import { postJson, startTestService, type TestService } from '../helpers/service.js';
import { Client, image, type Format } from '../helpers/ws.js';
import { startClient, wsUrl } from '../client/helpers.js';

/**
 * A subscriber that comes late is told where a market stands, not only its prices: a market made
 * inactive and settled before it subscribed (through ingest, with no terms, so no `market` frame
 * would follow its image for its terms) is sent its `market` and `result` frames right after the
 * image, so a client never takes it for a market open to bets; after a restart over the same
 * database too, where nothing of it was published since the pod started (its state comes from the
 * read model's first load). An open market without terms gets its image alone.
 */
const LEAGUE = 990101;
const EVENT = 99010101;
const CLOSED = '1.99010101001';
const OPEN = '1.99010101002';
const RUNNERS = [{ rid: 1, na: 'A' }, { rid: 2, na: 'B' }];

const ingest = async (svc: TestService, ...data: Record<string, unknown>[]) => {
  const r = await postJson(svc.url, '/api/v1/ingest', { data });
  if (r.status !== 200) throw new Error(`ingest refused (${r.status}): ${r.text}`);
};

/** The frames a socket was sent after its acks, market by market in the order sent (an image as its market alone). */
function after(c: Client): Record<string, unknown[]> {
  const out: Record<string, unknown[]> = {};
  for (const f of c.frames) if (f.op !== 'ack' && 'mid' in f) (out[f.mid] ??= []).push(f.op === 'odds' ? { odds: f.mid } : f);
  return out;
}

/** What a new socket in `format` taking both markets (by ID, or by their event) is sent, up to the ack of a ping. */
async function subscribed(t: Test, svc: TestService, how: { mids: string[] } | { eids: number[] }, format: Format = 'json'): Promise<Record<string, unknown[]>> {
  const c = await Client.connect(svc.url, { format });
  t.teardown(() => c.close());
  await c.request({ op: 'subscribe', ...how });
  await c.settled();
  c.close();
  return after(c);
}

/** What a new socket is sent of its client's stored set as it opens, with no request of its own. */
async function opened(t: Test, svc: TestService): Promise<Record<string, unknown[]>> {
  const c = await Client.connect(svc.url);
  t.teardown(() => c.close());
  await c.next((f) => f.op === 'result');
  await c.settled();
  c.close();
  return after(c);
}

/** What the package's client answers for a back bet on runner 1 of the closed market once it holds what it was sent, and the settlement it holds. */
async function canTakeClosed(t: Test, svc: TestService) {
  const { client } = startClient(t, { url: wsUrl(svc.url) });
  await client.subscribe({ mids: [CLOSED] });
  await client.ping();
  const answer = { ...client.canTake(CLOSED, 1, 'back'), settlement: client.settlement(CLOSED) };
  client.close();
  return answer;
}

/** The closed market's image, state and result; the open one's image, and nothing after it. */
const CLOSED_SENT = [
  { odds: CLOSED },
  { op: 'market', mid: CLOSED, s: false, go: false, rt: false },
  { op: 'result', mid: CLOSED, mt: 'match-odd', res: '1', rt: false, ia: false },
];
const EXPECTED = { [CLOSED]: CLOSED_SENT, [OPEN]: [{ odds: OPEN }] };

t.test('a socket subscribing after a market went inactive and was settled is told both after its image, before and after a restart', async (t) => {
  const first = await startTestService(t);
  await ingest(first,
    { kind: 'league', li: LEAGUE, si: 1, na: 'Late League' },
    { kind: 'event', eid: EVENT, na: 'Late Event', st: '2031-01-01T12:00:00.000Z', si: 1, li: LEAGUE },
    { kind: 'market', mid: CLOSED, eid: EVENT, na: 'Closed', ty: 'match-odd', r: RUNNERS },
    { kind: 'market', mid: OPEN, eid: EVENT, na: 'Open', ty: 'match-odd', r: RUNNERS },
    image(CLOSED, 2), image(OPEN, 3),
  );
  await ingest(first, { kind: 'market', mid: CLOSED, s: false }, { kind: 'result', mid: CLOSED, res: '1', rt: false, ia: false });

  t.same(await subscribed(t, first, { mids: [CLOSED, OPEN] }), EXPECTED, 'the closed market: image, state, result; the open one, without terms: its image alone');
  t.same(await subscribed(t, first, { eids: [EVENT] }), EXPECTED, 'the same by an event filter');
  const before = await canTakeClosed(t, first);
  t.equal(before.ok, false, 'the client refuses a bet on it');
  t.ok(before.why.includes('market inactive'), `because it is inactive (${before.why.join('; ')})`);
  t.match(before.settlement, { kind: 'settled' }, 'and it holds the settlement');
  await first.close();

  const second = await startTestService(t, {}, first.databaseUrl);
  // The book is in memory: the restarted pod holds the markets' prices once a publisher sends them again.
  await ingest(second, image(CLOSED, 2), image(OPEN, 3));
  t.same(await subscribed(t, second, { mids: [CLOSED, OPEN] }), EXPECTED, 'after a restart: the same, from the database');
  t.same(await subscribed(t, second, { mids: [CLOSED, OPEN] }, 'proto'), EXPECTED, 'in protobuf too');
  const later = await canTakeClosed(t, second);
  t.equal(later.ok, false, 'the client still refuses it');
  t.ok(later.why.includes('market inactive'), later.why.join('; '));
  t.match(later.settlement, { kind: 'settled' });
  t.equal((await postJson(second.url, '/api/v1/subscribe', { data: [CLOSED] })).status, 200);
  t.same(await opened(t, second), { [CLOSED]: CLOSED_SENT }, 'a socket opening with its client\'s stored set holding the market: the same, unasked');
  await second.close();
});
