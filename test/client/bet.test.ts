import t from 'tap';
import { reduce, WIN_MINIMUM_FACTOR } from '../../src/client/reduction.js';
import { settlementOf, TermsBook } from '../../src/client/terms.js';
import { checkBet, type HeldMarket } from '../../src/client/bet-check.js';
import { OddsClient } from '../../src/client/index.js';
import type { MarketStateMessage, OddsMessage, ResultMessage, WireTerms } from '../../src/odds/messages.js';
import { FakeSocket } from './helpers.js';

/**
 * The client's reading of a market's terms, without a server: Betfair's reduction rule for a
 * removed runner, a settlement as a site settles bets by it, the removals a `market` frame brings,
 * and the one answer to "can I take this bet?".
 */

const MATCHED = 1_000;
const win = (r: WireTerms['r'], more: Partial<WireTerms> = {}): WireTerms => ({ nw: 1, r, ...more });

t.test('reduction, win market: the matched price times (1 - factor), from 2.5%, each removal after the bet in order', async (t) => {
  t.same(reduce(win([{ rid: 2, st: 'REMOVED', af: 16.2, rd: 2_000 }]), 1, 8.6, MATCHED), { price: 7.21, void: false, applied: [{ rid: 2, factor: 16.2, at: 2_000 }] },
    'Betfair\'s own example: 8.6 less 16.2% is 7.21');
  t.same(reduce(win([{ rid: 2, st: 'REMOVED', af: 25, rd: 2_000 }]), 1, 8, MATCHED).price, 6, '8.0 less 25% is 6.0');
  t.same(reduce(win([{ rid: 2, st: 'REMOVED', af: WIN_MINIMUM_FACTOR - 0.01, rd: 2_000 }]), 1, 8, MATCHED), { price: 8, void: false, applied: [] }, 'under 2.5%: no reduction');
  t.same(reduce(win([{ rid: 3, st: 'REMOVED', af: 45, rd: 3_000 }, { rid: 2, st: 'REMOVED', af: 25, rd: 2_000 }]), 1, 10, MATCHED).price, 4.13,
    'two removals compound: 10 × 0.75 × 0.55');
  t.same(reduce(win([{ rid: 2, st: 'REMOVED', af: 25, rd: 500 }, { rid: 3, st: 'REMOVED', af: 45, rd: 3_000 }]), 1, 10, MATCHED).applied.map((a) => a.rid), [3],
    'a removal before the bet was matched does not reduce it: the market had re-formed');
  t.same(reduce(win([{ rid: 2, st: 'REMOVED', af: 25 }]), 1, 10, MATCHED).price, 7.5, 'a removal without a time counts as after the bet');
  t.same(reduce(win([{ rid: 2, st: 'ACTIVE', af: 90 }]), 1, 10, MATCHED).price, 10, 'a factor of a runner still running reduces nothing');
  t.same(reduce(win([{ rid: 2, st: 'REMOVED', af: 99, rd: 2_000 }]), 1, 1.5, MATCHED).price, 1.01, 'never below 1.01');
});

t.test('reduction, place market: the winnings times (1 - factor), every factor; each way: as a win market', async (t) => {
  const place = (af: number): WireTerms => ({ nw: 3, r: [{ rid: 2, st: 'REMOVED', af, rd: 2_000 }] });
  t.same(reduce(place(25), 1, 8, MATCHED).price, 6.25, 'Betfair\'s example: 8.0 less 25% of the winnings is 6.25');
  t.same(reduce(place(1), 1, 3, MATCHED).price, 2.98, 'a factor under 2.5% still applies');
  t.same(reduce({ nw: 3, ewd: 4, r: [{ rid: 2, st: 'REMOVED', af: 25, rd: 2_000 }] }, 1, 8, MATCHED).price, 6, 'each way: the win price is reduced');
});

t.test('a bet on the removed runner is void', async (t) => {
  t.same(reduce(win([{ rid: 1, st: 'REMOVED', af: 30, rd: 2_000 }]), 1, 5, MATCHED), { price: 5, void: true, applied: [] });
});

t.test('a settlement as a site settles by it: winners with dead-heat shares, voids, certainty, rollback', async (t) => {
  const base = { op: 'result' as const, mid: '1.1', mt: 'winner-market', rt: false, ia: false };
  t.same(settlementOf({ ...base, res: '1,2', cert: 'provisional', at: 5, rs: [{ rid: 1, st: 'WINNER', dh: 0.5 }, { rid: 2, st: 'WINNER', dh: 0.5 }, { rid: 3, st: 'REMOVED' }, { rid: 4, st: 'LOSER', vf: 0.5 }] }), {
    mid: '1.1', kind: 'settled', res: '1,2', certainty: 'provisional', at: 5, winners: [{ rid: 1, deadHeat: 0.5 }, { rid: 2, deadHeat: 0.5 }],
    voids: [{ rid: 3, voidFactor: 1 }, { rid: 4, voidFactor: 0.5 }],
  }, 'a removed runner is void whole unless said otherwise');
  t.same(settlementOf({ ...base, res: '1' }), { mid: '1.1', kind: 'settled', res: '1', winners: [], voids: [] }, 'a bare result');
  t.equal(settlementOf({ ...base, res: 'Abandoned', ia: true })?.kind, 'void');
  t.equal(settlementOf({ ...base, res: '1', rt: true })?.kind, 'rolled back');
  t.equal(settlementOf({ ...base, res: '', ia: true, rt: true })?.kind, 'rolled back', 'a void rolled back');
  t.equal(settlementOf({ ...base, res: '' }), undefined, 'unsettled');
});

t.test('the terms book: removals told once each, with factor and time; a change only when terms move', async (t) => {
  const book = new TermsBook();
  const frame = (r: WireTerms['r'], bd = 0): MarketStateMessage => ({ op: 'market', mid: '1.1', s: true, go: false, rt: false, terms: { bd, r } });
  const first = book.market(frame([{ rid: 1, st: 'ACTIVE', af: 20 }, { rid: 2, st: 'ACTIVE', af: 30 }]));
  t.same(first.removals, []);
  t.same(first.terms?.previous, undefined);
  const removed = book.market(frame([{ rid: 1, st: 'ACTIVE', af: 20 }, { rid: 2, st: 'REMOVED', af: 30, rd: 7 }]));
  t.same(removed.removals, [{ mid: '1.1', rid: 2, factor: 30, at: 7 }]);
  t.same(book.market(frame([{ rid: 1, st: 'ACTIVE', af: 20 }, { rid: 2, st: 'REMOVED', af: 30, rd: 7 }])), { terms: undefined, removals: [] }, 'the same again: nothing');
  t.equal(book.market(frame([{ rid: 1, st: 'ACTIVE', af: 20 }, { rid: 2, st: 'REMOVED', af: 30, rd: 7 }], 5)).terms?.terms?.bd, 5, 'the delay moved');
  t.same(book.runner('1.1', 9), { rid: 9, st: 'ACTIVE' }, 'a runner the terms leave out is active');
  book.delete('1.1');
  t.equal(book.terms('1.1'), undefined);
});

const image = (over: Partial<OddsMessage> = {}): OddsMessage => ({
  op: 'odds', mid: '1.1', epoch: 'e', seq: 1, ts: 9_000, pt: 9_500, st: 'OPEN', ip: true, con: false, cf: false,
  r: [{ rid: 1, st: 'ACTIVE', b: [[2.5, 100]], l: [[2.52, 50]] }, { rid: 2, st: 'ACTIVE', b: [], l: [[4, 10]] }], ...over,
});
const state = (terms?: WireTerms, over: Partial<MarketStateMessage> = {}): MarketStateMessage => ({ op: 'market', mid: '1.1', s: true, go: false, rt: false, ...(terms ? { terms } : {}), ...over });
const held = (over: Partial<HeldMarket> = {}): HeldMarket => ({
  frame: image(), delay: { at: 9_600, source: 600, publish: 100 }, freshness: { mid: '1.1', live: true }, state: state({ bd: 5, tip: true, r: [{ rid: 1, st: 'ACTIVE', af: 12.5, hc: 0 }] }), settlement: undefined, ...over,
});

t.test('can I take this bet: the price, its age and freshness, the market\'s state and bet delay, the runner\'s status and factor', async (t) => {
  t.same(checkBet('1.1', 1, 'back', held(), 10_000), {
    mid: '1.1', rid: 1, side: 'back', ok: true, why: [], price: 2.5, size: 100, age: { published: 500, received: 400 },
    freshness: { mid: '1.1', live: true },
    market: { status: 'OPEN', inPlay: true, active: true, concluded: false, betDelay: 5, turnInPlay: true },
    runner: { status: 'ACTIVE', adjustmentFactor: 12.5, handicap: 0 },
  });
  t.match(checkBet('1.1', 1, 'lay', held(), 10_000), { ok: true, price: 2.52, size: 50 });
  const no = (h: HeldMarket, rid = 1, side: 'back' | 'lay' = 'back') => checkBet('1.1', rid, side, h, 10_000).why;
  t.same(no(held({ frame: image({ st: 'SUSPENDED' }) })), ['market SUSPENDED']);
  t.same(no(held({ freshness: { mid: '1.1', live: false, why: 'publisher', since: 1 } })), ['prices stale: publisher']);
  t.same(no(held({ state: state({ r: [{ rid: 1, st: 'REMOVED', af: 12.5, rd: 3 }] }) })), ['runner REMOVED']);
  t.same(no(held({ state: state(undefined, { s: false }) })), ['market inactive']);
  t.same(no(held(), 2), ['no back price']);
  t.same(no(held(), 7), ['runner 7 not in the market', 'no back price']);
  t.same(no(held({ frame: undefined, delay: undefined })), ['no prices for the market']);
  t.same(checkBet('1.1', 1, 'back', held({ state: undefined }), 10_000).market, { status: 'OPEN', inPlay: true }, 'without terms: no delay to report');
  for (const side of ['Back', 'BACK', 'b', undefined]) {
    t.match(checkBet('1.1', 1, side as never, held(), 10_000), { ok: false, why: [`side ${JSON.stringify(side)} is neither back nor lay`], price: undefined },
      `a side from JavaScript that is neither (${side}): no, and no price (it was the lay price, ok)`);
  }
});

t.test('the terms book keeps only what it is told to: a lost connection drops the concluded markets it held', async (t) => {
  const book = new TermsBook();
  book.market({ op: 'market', mid: '1.1', s: true, go: false, rt: false, terms: { bd: 1 } });
  book.market({ op: 'market', mid: '1.2', s: false, go: true, rt: false, terms: { bd: 1 } });
  book.result({ op: 'result', mid: '1.2', mt: 'match-odd', res: '1', rt: false, ia: false });
  book.retain((mid) => mid === '1.1');
  t.same([book.terms('1.1'), book.terms('1.2'), book.settlement('1.2')], [{ bd: 1 }, undefined, undefined]);
});

const result = (over: Partial<ResultMessage> = {}): ResultMessage => ({ op: 'result', mid: '1.1', mt: 'winner-market', res: '', rt: false, ia: false, ...over });

t.test('can I take this bet once the market has a result: settled or void, no, though its state still says active; rolled back, yes again', async (t) => {
  const answer = (r: ResultMessage) => checkBet('1.1', 1, 'back', held({ settlement: settlementOf(r) }), 10_000);
  t.match(answer(result({ res: '1', cert: 'provisional', rs: [{ rid: 1, st: 'WINNER' }, { rid: 2, st: 'LOSER' }] })),
    { ok: false, why: ['market settled'], market: { active: true, concluded: false, settlement: 'settled' } }, 'settled, even provisionally');
  t.match(answer(result({ rs: [{ rid: 1, st: 'PLACED' }] })), { ok: false, why: ['market settled'] }, 'settled by its runners alone');
  t.match(answer(result({ res: 'Abandoned', ia: true })), { ok: false, why: ['market void'], market: { settlement: 'void' } }, 'void');
  t.match(answer(result({ res: '1', rt: true })), { ok: true, why: [], price: 2.5, market: { settlement: 'rolled back' } }, 'the settlement rolled back: open again');
  t.match(answer(result({ ia: true, rt: true })), { ok: true, why: [] }, 'the void rolled back');
  const unsettled = answer(result());
  t.match(unsettled, { ok: true, why: [] }, 'a result saying unsettled');
  t.notOk('settlement' in unsettled.market, 'and no settlement to report');
  t.same(checkBet('1.1', 1, 'back', held({ state: state(undefined, { s: false }), settlement: settlementOf(result({ res: '1' })) }), 10_000).why,
    ['market inactive', 'market settled'], 'each thing that says no');
});

t.test('the client answers by the newest result frame it read: settled, rolled back, voided', async (t) => {
  const client = new OddsClient({ url: 'ws://odds.test/ws', WebSocket: FakeSocket as never, hb: 30000 });
  t.teardown(() => client.close());
  client.connect();
  const socket = FakeSocket.last;
  socket.emit('open', {});
  const subscribed = client.subscribe({ mids: ['1.1'] });
  socket.frame({ op: 'ack', id: 1, status: 1, message: 'Subscribed from market 1.1' });
  await subscribed;
  socket.frame(image());
  socket.frame(state());
  const take = () => client.canTake('1.1', 1, 'back');
  t.match(take(), { ok: true, why: [] }, 'open, active, unsettled');
  socket.frame(result({ res: '1' }));
  t.match(take(), { ok: false, why: ['market settled'], market: { active: true, concluded: false, settlement: 'settled' } });
  socket.frame(result({ res: '1', rt: true }));
  t.match(take(), { ok: true, why: [], market: { settlement: 'rolled back' } });
  socket.frame(result({ res: 'Abandoned', ia: true }));
  t.match(take(), { ok: false, why: ['market void'] });
});
