/**
 * The TypeScript client over real sockets against the real service: a market's terms in its model
 * and as events (a bet delay raised as it turns in play, a runner removed with its factor and
 * time), settlement both ways as events (dead heats, voids, provisional then confirmed, rolled
 * back, the final result of a market that concludes), and one call answering "can I take this
 * bet?", in both formats.
 */
import t from 'tap';
import { postJson, startTestService } from '../helpers/service.js';
import { image } from '../helpers/ws.js';
import { next, startClient, wsUrl } from './helpers.js';

type Obj = Record<string, unknown>;
const svc = await startTestService(t, { DEMO_DATA: 'off' });
const ingest = async (...data: Obj[]) => {
  const r = await postJson<{ message: string }>(svc.url, '/api/v1/ingest', { data });
  if (r.status !== 200) throw new Error(`ingest: ${r.status} ${r.body.message}`);
};

const RUNNERS = [1, 2, 3, 4];
await ingest(
  { kind: 'sport', si: 7, na: 'Horse Racing', a: true },
  { kind: 'league', li: 7001, si: 7, na: 'Ascot' },
  { kind: 'event', eid: 900001, na: '14:30 Ascot', st: '2030-06-01T14:30:00.000Z', go: false, ip: false, si: 7, li: 7001, tv: null },
);

for (const format of ['json', 'proto'] as const) {
  const mid = format === 'json' ? '7.1' : '7.2';

  t.test(`${format}: terms in the model and as events; a removal at once with its factor and time; can I take this bet`, async (t) => {
    await ingest(
      { kind: 'market', mid, eid: 900001, na: 'Win', ty: 'winner-market', s: true, go: false, rt: false, r: RUNNERS.map((rid) => ({ rid, na: `Horse ${rid}` })) },
      { kind: 'terms', mid, bd: 0, tip: true, nw: 1, bsp: true, cc: 'GB', r: [{ rid: 1, st: 'ACTIVE', af: 40 }, { rid: 2, st: 'ACTIVE', af: 25 }] },
      image(mid, 3, RUNNERS),
    );
    const { client } = startClient(t, { url: wsUrl(svc.url), format });
    const first = next(client, 'terms', (m) => m === mid);
    const ack = await client.subscribe({ eids: [900001], tys: ['winner-market'], ccs: ['GB'], bsp: undefined } as never);
    t.match(ack.message, /^Subscribed from event 900001 \(ty winner-market; cc GB\) \(\d+ markets\)$/, 'narrowed as asked');
    const [, terms, previous] = await first;
    t.same([terms, previous], [{ bd: 0, tip: true, nw: 1, bsp: true, cc: 'GB', r: [{ rid: 1, st: 'ACTIVE', af: 40 }, { rid: 2, st: 'ACTIVE', af: 25 }] }, undefined], 'on subscribe, after the image');
    t.match(client.canTake(mid, 1, 'back'), { ok: true, why: [], price: 3, market: { status: 'OPEN', betDelay: 0, turnInPlay: true }, runner: { status: 'ACTIVE', adjustmentFactor: 40 } });

    const removedAt = Date.now() - 1000;
    const removal = next(client, 'removal', (r) => r.mid === mid);
    const moved = next(client, 'terms', (m, now) => m === mid && now?.bd === 5);
    await ingest({ kind: 'terms', mid, bd: 5, r: [{ rid: 2, st: 'REMOVED', rd: removedAt }] }, { kind: 'event', eid: 900001, ip: true });
    t.same((await removal)[0], { mid, rid: 2, factor: 25, at: removedAt }, 'the removal with its factor and time');
    await moved;
    t.match(client.canTake(mid, 1, 'back'), { ok: true, market: { betDelay: 5 } }, 'the delay in play');
    t.same(client.canTake(mid, 2, 'back').why, ['runner REMOVED']);
    t.match(client.canTake(mid, 2, 'back').runner, { status: 'REMOVED', adjustmentFactor: 25, removedAt });
    t.same(client.reduced(mid, 1, 8.6, removedAt - 60_000), { price: 6.45, void: false, applied: [{ rid: 2, factor: 25, at: removedAt }] },
      'a bet matched before the removal: 8.6 less 25%');
    t.same(client.reduced(mid, 1, 8.6, removedAt + 1), { price: 8.6, void: false, applied: [] }, 'one matched after it: as matched');
    t.equal(client.reduced(mid, 2, 8.6, removedAt - 1)?.void, true, 'a bet on the removed runner is void');
  });

  t.test(`${format}: settlement both ways as events, the final result of a concluding market included`, async (t) => {
    const { client } = startClient(t, { url: wsUrl(svc.url), format });
    await client.subscribe({ mids: [mid] });
    const kinds: string[] = [];
    client.on('settlement', (s) => kinds.push(`${s.kind}${s.certainty ? ` ${s.certainty}` : ''}`));
    const rs = [{ rid: 1, st: 'WINNER', dh: 0.5 }, { rid: 3, st: 'WINNER', dh: 0.5 }, { rid: 2, st: 'REMOVED', vf: 1 }, { rid: 4, st: 'LOSER' }];
    const provisional = next(client, 'settlement', (s) => s.mid === mid && s.certainty === 'provisional');
    await ingest({ kind: 'result', mid, res: '1,3', rt: false, ia: false, cert: 'provisional', rs });
    t.same((await provisional)[0], {
      mid, kind: 'settled', res: '1,3', certainty: 'provisional', winners: [{ rid: 1, deadHeat: 0.5 }, { rid: 3, deadHeat: 0.5 }], voids: [{ rid: 2, voidFactor: 1 }],
    }, 'a dead heat and a removed runner\'s void');
    const back = next(client, 'settlement', (s) => s.mid === mid && s.kind === 'rolled back');
    await ingest({ kind: 'result', mid, rt: true });
    await back;
    const voided = next(client, 'settlement', (s) => s.mid === mid && s.kind === 'void');
    await ingest({ kind: 'result', mid, rt: false, ia: true, res: 'Abandoned', rs: null });
    await voided;
    const unvoided = next(client, 'settlement', (s) => s.mid === mid && s.kind === 'rolled back' && s.res === 'Abandoned');
    await ingest({ kind: 'result', mid, rt: true });
    await unvoided;
    const final = next(client, 'settlement', (s) => s.mid === mid && s.certainty === 'confirmed');
    const gone = next(client, 'unsubscribed', (u) => u.mids.includes(mid));
    await ingest({ kind: 'market', mid, s: false, go: true }, { kind: 'result', mid, res: '3', rt: false, ia: false, cert: 'confirmed', rs: [{ rid: 3, st: 'WINNER' }] });
    t.match((await final)[0], { kind: 'settled', res: '3', winners: [{ rid: 3, deadHeat: 1 }] }, 'the final result after the market concluded still reaches the client');
    await gone;
    t.same(kinds, ['settled provisional', 'rolled back provisional', 'void provisional', 'rolled back provisional', 'settled confirmed']);
    t.equal(client.terms(mid), undefined, 'detached: nothing of it kept');
  });
}
