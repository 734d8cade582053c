import t from 'tap';
import { eventLeagueRefusal, marketChangeRefusal, sportChangeRefusal, termsChangeRefusal } from '../../src/ingest/validate-change.js';
import type { MarketItem } from '../../src/ingest/items.js';

/**
 * What an item may change of a market that exists, without a server: its type and its event are
 * fixed once it is created (a change would leave the old type's runners, settlement or nested
 * markets behind, or carry them into another match); a line's range and step only on a line market.
 */
const STORED = { type: 'match-odd', eventId: 30000011 } as const;
const market = (over: Partial<MarketItem>): MarketItem => ({ kind: 'market', id: '1.5', ...over });

t.test('a market item may restate its type and event, or leave them out', async (t) => {
  t.equal(marketChangeRefusal(STORED, market({ type: 'match-odd', eventId: 30000011, isActive: false })), undefined);
  t.equal(marketChangeRefusal(STORED, market({ concluded: true })), undefined);
});

t.test('a new type is refused, naming both types: a match-odds market does not become a player race, nor back', async (t) => {
  t.equal(marketChangeRefusal(STORED, market({ type: 'player-race' })),
    'ty player-race would change the type of market 1.5 (match-odd): a market\'s type never changes; a market of another type needs its own mid');
  t.match(marketChangeRefusal({ ...STORED, type: 'player-race' }, market({ type: 'match-odd' })), /^ty match-odd would change the type of market 1\.5 \(player-race\)/);
});

t.test('a new event is refused, naming both: a market does not move to another match, or another sport\'s', async (t) => {
  t.equal(marketChangeRefusal(STORED, market({ eventId: 40000001 })),
    'eid 40000001 would move market 1.5 from event 30000011: a market stays in the event it was created in; a market of another event needs its own mid');
});

t.test('a league and an event keep their sport: another si is refused, naming both; restating it, or leaving it out, is no change', async (t) => {
  t.equal(sportChangeRefusal(55, { kind: 'event', id: 55000001, sportId: 78 }),
    'si 78 would move event 55000001 from sport 55: an event stays in the sport it was created in (its markets with it); an event of another sport needs its own eid');
  t.equal(sportChangeRefusal(55, { kind: 'league', id: 5501, sportId: 78 }),
    'si 78 would move league 5501 from sport 55: a league stays in the sport it was created in (its events with it); a league of another sport needs its own li');
  t.equal(sportChangeRefusal(55, { kind: 'event', id: 55000001, sportId: 55, leagueId: 5502 }), undefined);
  t.equal(sportChangeRefusal(55, { kind: 'league', id: 5501, name: 'Renamed' }), undefined);
});

t.test('an event\'s league is one of its sport', async (t) => {
  t.equal(eventLeagueRefusal({ sportId: 55, leagueId: 7801, leagueSportId: 78 }),
    'li 7801 is a league of sport 78, not of the event\'s sport 55: an event\'s league is one of its sport');
  t.equal(eventLeagueRefusal({ sportId: 55, leagueId: 5501, leagueSportId: 55 }), undefined);
});

t.test('lmin, lmax and lint only on a line market: refused on a runner market, naming each given', async (t) => {
  t.equal(termsChangeRefusal('match-odd', '1.5', { lineMin: 0, lineMax: 100, lineInterval: 0.5, betDelay: 5 }),
    'lmin, lmax, lint are only for line markets (session, ball-by-ball, odd-even, khadometer, line-market, other-market); market 1.5 is match-odd');
  t.equal(termsChangeRefusal('player-race', '1.5', { lineInterval: 1 }),
    'lint is only for line markets (session, ball-by-ball, odd-even, khadometer, line-market, other-market); market 1.5 is player-race');
  t.equal(termsChangeRefusal('session', '1.5', { lineMin: 0, lineMax: 500, lineInterval: 1 }), undefined, 'a session is a line');
  t.equal(termsChangeRefusal('line-market', '1.5', { lineMin: 0.5 }), undefined);
  t.equal(termsChangeRefusal('match-odd', '1.5', { lineMin: null, lineMax: null, lineInterval: null }), undefined, 'clearing them is always allowed');
  t.equal(termsChangeRefusal('match-odd', '1.5', { betDelay: 5, winners: 1 }), undefined, 'the other terms are any market\'s');
});

t.test('a line betting type (bt LINE or RANGE) only on a line market: on a runner market it would have its odds read as lines', async (t) => {
  t.equal(termsChangeRefusal('match-odd', '1.5', { bettingType: 'LINE' }),
    'bt LINE is only for line markets (session, ball-by-ball, odd-even, khadometer, line-market, other-market); market 1.5 is match-odd');
  t.equal(termsChangeRefusal('goals', '1.5', { bettingType: 'RANGE', lineMin: 0 }),
    'bt RANGE, lmin are only for line markets (session, ball-by-ball, odd-even, khadometer, line-market, other-market); market 1.5 is goals');
  t.equal(termsChangeRefusal('line-market', '1.5', { bettingType: 'LINE' }), undefined, 'an exchange\'s line market');
  t.equal(termsChangeRefusal('match-odd', '1.5', { bettingType: 'ODDS' }), undefined);
  t.equal(termsChangeRefusal('other-market', '1.5', { bettingType: 'ASIAN_HANDICAP_DOUBLE_LINE' }), undefined);
  t.equal(termsChangeRefusal('match-odd', '1.5', { bettingType: 'ASIAN_HANDICAP_SINGLE_LINE' }), undefined, 'Asian handicaps are priced in odds');
  t.equal(termsChangeRefusal('match-odd', '1.5', { bettingType: null }), undefined, 'clearing it is always allowed');
});
