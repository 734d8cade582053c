import t from 'tap';
import { validateReference } from '../../src/ingest/validate.js';

/**
 * `terms` items and a result's settlement keys as ingest reads them, without a server: each key
 * given becomes its domain term, null clears it, one left out stays; a bad one is refused naming
 * its field and the rule.
 */
const read = (item: Record<string, unknown>) => {
  const r = validateReference(item);
  return 'error' in r ? r.error : r.item;
};

t.test('every term by its wire key, runners\' terms in order, null as a clear', async (t) => {
  t.same(read({
    kind: 'terms', mid: '1.2', bd: 5, tip: true, sus: 1795313378336, bt: 'ODDS', nw: 3, ewd: 4, bsp: true, cc: 'GB', ven: 'Ascot', race: 'Flat',
    mbr: 5, reg: ['GBR'], lmin: 0, lmax: 10, lint: 0.5, r: [{ rid: 2, st: 'REMOVED', af: 26.285, rd: 1795313000000, hc: -1 }, { rid: 1, af: null }],
  }), {
    kind: 'terms', marketId: '1.2', terms: {
      betDelay: 5, turnInPlay: true, suspendAt: 1795313378336, bettingType: 'ODDS', winners: 3, eachWayDivisor: 4, startingPrice: true, country: 'GB',
      venue: 'Ascot', raceType: 'Flat', commission: 5, regulators: ['GBR'], lineMin: 0, lineMax: 10, lineInterval: 0.5,
    },
    runners: [{ runnerId: 2, status: 'REMOVED', adjustmentFactor: 26.285, removedAt: 1795313000000, handicap: -1 }, { runnerId: 1, adjustmentFactor: null }],
  });
  t.same(read({ kind: 'terms', mid: '1.2', bd: 0, sus: null }), { kind: 'terms', marketId: '1.2', terms: { betDelay: 0, suspendAt: null } }, 'only what it carries');
});

t.test('a bad term is refused naming its field and the rule', async (t) => {
  const cases: [Record<string, unknown>, string][] = [
    [{ bd: 1.5 }, 'bd must be a bet delay in seconds, a whole number from 0 to 600'],
    [{ bd: 601 }, 'bd must be a bet delay in seconds from 0 to 600'],
    [{ tip: 'yes' }, 'tip must be true or false'],
    [{ sus: -1 }, 'sus must be a time in ms since the epoch from 0 to 253402300799999'],
    [{ nw: 0 }, 'nw must be a number of winners from 1 to 500'],
    [{ ewd: 0.5 }, 'ewd must be an each-way divisor from 1 to 100'],
    [{ cc: 'GBR' }, 'cc must be an ISO 3166 country code of two capital letters'],
    [{ ven: 'x'.repeat(101) }, 'ven must be a string of at most 100 characters'],
    [{ mbr: -1 }, 'mbr must be a commission percentage from 0 to 100'],
    [{ reg: ['a\u0000'] }, 'reg[0] must not contain NUL characters'],
    [{ reg: 'GBR' }, 'reg must be an array of at most 20'],
    [{ lint: 0 }, 'lint must be above 0'],
    [{ lmin: 5, lmax: 4 }, 'lmax must be at least lmin (5)'],
    [{ hc: -1.5 }, 'hc is a runner\'s handicap, not a market\'s term: give it in r, as r[i].hc'],
    [{ hc: null, bd: 0 }, 'hc is a runner\'s handicap, not a market\'s term: give it in r, as r[i].hc'],
    [{ r: [{ rid: 0 }] }, 'r[0].rid must be a positive integer'],
    [{ r: [{ rid: 1 }, { rid: 1 }] }, 'r[1].rid repeats runner 1'],
    [{ r: [{ rid: 1, st: 'REMOVED_VACANT' }] }, 'r[0].st must be one of ACTIVE, REMOVED, WINNER, LOSER, PLACED, HIDDEN'],
    [{ r: [{ rid: 1, rd: 'yesterday' }] }, 'r[0].rd must be a time in ms since the epoch from 0 to 253402300799999'],
  ];
  for (const [keys, why] of cases) t.equal(read({ kind: 'terms', mid: '1.2', ...keys }), why, JSON.stringify(keys));
  t.equal(read({ kind: 'terms', mid: 'a b' }), 'mid must match [A-Za-z0-9._:-]{1,64}');
});

t.test('a result\'s settlement: certainty, when, each runner with its dead-heat share and void factor', async (t) => {
  t.same(read({ kind: 'result', mid: '1.2', res: '1,2', cert: 'provisional', at: 1, rs: [{ rid: 1, st: 'WINNER', dh: 0.5 }, { rid: 3, st: 'REMOVED', vf: 1 }] }), {
    kind: 'result', marketId: '1.2', outcome: '1,2',
    settlement: { certainty: 'provisional', settledAt: 1, runners: [{ runnerId: 1, status: 'WINNER', deadHeat: 0.5 }, { runnerId: 3, status: 'REMOVED', voidFactor: 1 }] },
  });
  t.same(read({ kind: 'result', mid: '1.2', rt: true, cert: null, rs: null }), { kind: 'result', marketId: '1.2', recalled: true, settlement: { certainty: null, runners: null } });
  t.same(read({ kind: 'result', mid: '1.2', res: '1' }), { kind: 'result', marketId: '1.2', outcome: '1' }, 'none: no settlement key');
  const cases: [Record<string, unknown>, string][] = [
    [{ cert: 'final' }, 'cert must be one of provisional, confirmed'],
    [{ rs: [{ rid: 1, st: 'LOSER', dh: 0.5 }] }, 'rs[0].dh is only for a WINNER or PLACED runner'],
    [{ rs: [{ rid: 1, st: 'WINNER', dh: 0 }] }, 'rs[0].dh must be above 0: a runner that shares no place is a LOSER'],
    [{ rs: [{ rid: 1, st: 'WINNER', dh: 1.5 }] }, 'rs[0].dh must be a dead-heat share from 0 to 1'],
    [{ rs: [{ rid: 1, st: 'LOSER', vf: 2 }] }, 'rs[0].vf must be a void factor from 0 to 1'],
    [{ rs: [{ rid: 1, st: 'VOID' }] }, 'rs[0].st must be one of WINNER, LOSER, PLACED, REMOVED'],
    [{ rs: [{ rid: 1, st: 'WINNER' }, { rid: 1, st: 'LOSER' }] }, 'rs[1].rid repeats runner 1'],
  ];
  for (const [keys, why] of cases) t.equal(read({ kind: 'result', mid: '1.2', ...keys }), why, JSON.stringify(keys));
});
