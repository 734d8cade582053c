/**
 * The client's book on deltas against the real service: deltas applied to the image held, and a
 * delta for an image it does not hold dropped and the market asked for again with `since`.
 */
import t from 'tap';
import { postJson, startTestService } from '../helpers/service.js';
import { MovingMarket } from '../helpers/moving.js';
import type { AckMessage, OddsMessage } from '../../src/odds/messages.js';
import { next, startClient, until, wsUrl } from './helpers.js';

const svc = await startTestService(t);
const post = async (...data: Record<string, unknown>[]) => {
  const r = await postJson(svc.url, '/api/v1/ingest', { data });
  if (r.status !== 200) throw new Error(`ingest refused: ${r.text}`);
};
const body = (m: OddsMessage | undefined) => m && { mid: m.mid, epoch: m.epoch, seq: m.seq, ts: m.ts, st: m.st, ip: m.ip, r: m.r, tv: m.tv };
const newest = (mid: string) => svc.book.get(mid)!.message();

let n = 0;
for (const format of ['json', 'proto'] as const) {
  t.test(`${format}: a delta subscriber's book follows a long stream and ends equal to the server's`, async (t) => {
    const market = new MovingMarket(`1.31000000${++n}`, 12, n);
    await post(market.market(), market.next(false));
    const { client, frames } = startClient(t, { url: wsUrl(svc.url), format });
    let events = 0;
    client.on('odds', () => events++);
    await client.subscribe({ mids: [market.mid], delta: true });
    for (let i = 0; i < 20; i++) await post(...Array.from({ length: 10 }, () => market.next()));
    t.ok(await until(() => client.book.get(market.mid)?.seq === newest(market.mid).seq), 'it reaches the newest seq');
    t.strictSame(body(client.book.get(market.mid)), body(newest(market.mid)), 'its book equals the server\'s image');
    const deltas = frames.filter((f) => f.op === 'delta').length;
    t.ok(deltas > 150, `most frames were deltas (${deltas})`);
    t.equal(events, frames.filter((f) => f.op === 'odds' || f.op === 'delta').length, 'every image and delta was emitted as an odds event');
  });

  t.test(`${format}: a delta whose from is not held is dropped and the market asked for again with since, ending equal`, async (t) => {
    const market = new MovingMarket(`1.31000000${++n}`, 12, n);
    await post(market.market(), market.next(false));
    const { client, frames } = startClient(t, { url: wsUrl(svc.url), format });
    await client.subscribe({ mids: [market.mid], delta: true });
    await post(market.next(false));
    t.ok(await until(() => client.book.get(market.mid)?.seq === 2), 'the first delta applied');
    // The client missed a frame: it holds seq 1 while the server's next delta is from 2.
    const first = frames.find((f): f is OddsMessage => f.op === 'odds' && f.seq === 1)!;
    client.book.delete(market.mid);
    client.book.apply(first);
    const asked = next(client, 'message', (m) => m.op === 'ack' && m.current !== undefined);
    await post(market.next(false));
    const [ack] = (await asked) as [AckMessage];
    t.equal(ack.current, 0, 'it subscribed again saying what it held (since), which was not current');
    t.ok(await until(() => client.book.get(market.mid)?.seq === 3), 'it reaches the newest seq');
    t.strictSame(body(client.book.get(market.mid)), body(newest(market.mid)), 'its book equals the server\'s image');
    const at = frames.findIndex((f) => f.op === 'delta' && f.seq === 3);
    t.equal(at >= 0 && frames[at].op === 'delta' && frames[at].from, 2, 'the delta from 2 arrived');
    t.ok(frames.slice(at + 1).some((f) => f.op === 'odds' && f.seq === 3), 'and then the image of seq 3');
    await post(market.next(false));
    t.ok(await until(() => client.book.get(market.mid)?.seq === 4), 'deltas apply again after it');
    t.strictSame(body(client.book.get(market.mid)), body(newest(market.mid)));
  });
}
