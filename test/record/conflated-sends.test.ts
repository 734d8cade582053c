/**
 * A conflated socket's sends, read back from the record: its variant's sends are placed before or
 * after the socket's joining the topic by their order among the pod's notes, not only by their ms,
 * and an image its topic sent again right after it joined with it counts twice, as the socket got
 * it twice. Notes written by the recorder into a real Postgres, read by the record's socket query.
 */
import t from 'tap';
import { freshDatabase } from '../helpers/db.js';
import { testRecord } from '../helpers/record.js';
import { waitFor } from '../helpers/wait.js';
import { imageOf } from '../helpers/images.js';
import { SocketRecord } from '../../src/record/sockets.js';
import type { RecordNote } from '../../src/bus/types.js';

const url = await freshDatabase(t);
const { log, pool } = await testRecord(t, url, { batch: 100, flushMs: 250 });
const sockets = new SocketRecord(pool);

const T = Date.now() - 60_000;
const thin = { variant: 'j0.100', depth: 0, conflate: 100, delta: false };
let n = 0;
const note = (at: number, topic: RecordNote['topic'], body: Record<string, unknown>) => log.append({ kind: 'note', note: { topic, src: 'pa', n: ++n, at, body } });
const ledger = (at: number, op: string, body: Record<string, unknown> = {}) => note(at, 'ledger', { conn: 'pa.1', op, ...body });
const sent = (at: number, seq: number) => note(at, 'sent', { ...thin, mid: '1.1', epoch: 'e', seq });

t.test('sends of the ms it joined count only after it; an image sent again counts again', async (t) => {
  for (let seq = 4; seq <= 8; seq++) {
    log.append({ kind: 'odds', o: { epoch: 'e', seq, publishTime: T - 100 + seq, image: imageOf({ mid: '1.1', ts: seq, st: 'OPEN', ip: false, r: [{ rid: 1, st: 'ACTIVE', b: [[2 + seq / 100, 1]], l: [] }] }) } });
  }
  ledger(T, 'open', { key: 'public', client: 'public', address: '127.0.0.1', format: 'json', hb: 5000 });
  ledger(T, 'take', { ...thin, seqs: [['1.1', null, null]] });
  sent(T + 10, 4); // its topic's send in the ms it joined, before it: not to it
  ledger(T + 10, 'join', { seqs: [['1.1', 'e', 5, true]] });
  sent(T + 10, 5); // the image it joined with, sent again by its topic (marked before it joined)
  sent(T + 110, 7);
  ledger(T + 200, 'close', { code: 1000, seqs: [['1.1', 'e', 7]] });
  sent(T + 200, 8); // after its close, in the same ms
  await waitFor(async () => (await pool.query('SELECT count(*)::int AS c FROM record_ledger')).rows[0].c === 4, 'the notes recorded');
  const answer = await sockets.ledger('pa.1');
  t.same(answer.markets['1.1'].spans.map((s) => [s.from, s.sent, s.seqs, s.to]), [[5, true, [5, 5, 7], 7]], 'exactly what it got, in order');
  t.same(answer.events.map((e) => Object.keys(e)), Array(4).fill(['at', 'op', 'body']), 'each event as documented, its number kept inside');
  const seqAt = async (at: number) => (await sockets.screen('pa.1', at)).markets.map((m) => [m.behind, m.odds?.seq]);
  t.same(await seqAt(T + 10), [[null, 5]], 'its screen as it joined: the image it was sent');
  t.same(await seqAt(T + 150), [[null, 7]], 'then the newest its variant sent it');
});
