/**
 * The demo data set, as ingest items. It loads into an empty database so a
 * fresh `npm start` has something to show, and it doubles as a fixture: between them the events
 * cover every state a client must handle (upcoming, in play, concluded, abandoned, recalled,
 * suspended) and event 30000001 carries every market type except `goals`, which only
 * means something on soccer. Start times are relative to `now` so the set never goes stale; the
 * match day (match-day.ts) then runs the day on from there.
 */
import type { WireLeague, WireRunner, WireSport } from '../refdata/wire.js';
import {
  type DemoItem, type DemoMarket, type NonRunner, type DemoResult,
  CSK, ENG, IND, KKR, MI, NO, RCB, SIX, STA, YES,
  closed, cricketCore, everyCricketType, market, marketIdOf, race, result, rn, session, soccer, termsOf, tennis,
} from './markets.js';
import { SLOTS, fixtureMarkets, liveTvFor } from './fixtures.js';

type DemoEvent = Extract<DemoItem, { kind: 'event' }>;
type State = 'live' | 'done' | 'soon';

const HOUR = 3_600_000;

const SPORTS: WireSport[] = [
  { si: 4, na: 'Cricket', a: true },
  { si: 1, na: 'Soccer', a: true },
  { si: 2, na: 'Tennis', a: true },
  { si: 7, na: 'Horse Racing', a: true },
  // Configured but switched off, so the sport list shows an `a: false` entry.
  { si: 99, na: 'Kabaddi', a: false },
];

const LEAGUES: WireLeague[] = [
  { li: 4001, si: 4, na: 'ICC T20 World Cup' },
  { li: 4002, si: 4, na: 'Indian Premier League' },
  { li: 4003, si: 4, na: 'Big Bash League' },
  { li: 1001, si: 1, na: 'English Premier League' },
  { li: 1002, si: 1, na: 'La Liga' },
  { li: 2001, si: 2, na: 'ATP Tour' },
  { li: 2002, si: 2, na: 'WTA Tour' },
  { li: 7001, si: 7, na: 'Royal Ascot' },
  { li: 7002, si: 7, na: 'Cheltenham Festival' },
];

const horses = (field: string): WireRunner[] => field.split(', ').map((na) => rn(0, na));

/** Each fixture slot's first fixture: its two sides, or a race's field. */
const FIRST: Readonly<Record<number, WireRunner[]>> = {
  30000004: [RCB, KKR],
  30000006: [rn(123, 'Perth Scorchers'), rn(124, 'Brisbane Heat')],
  30000007: [rn(115, 'Delhi Capitals'), rn(116, 'Rajasthan Royals')],
  30000012: [rn(1103, 'Liverpool'), rn(1104, 'Manchester City')],
  30000014: [rn(1201, 'Real Madrid'), rn(1202, 'Barcelona')],
  30000015: [rn(1203, 'Atletico Madrid'), rn(1204, 'Sevilla')],
  30000022: [rn(2103, 'Novak Djokovic'), rn(2104, 'Alexander Zverev')],
  30000024: [rn(2201, 'Iga Swiatek'), rn(2202, 'Aryna Sabalenka')],
  30000025: [rn(2203, 'Coco Gauff'), rn(2204, 'Elena Rybakina')],
  30000032: horses('River Tiber, Bucanero Fuerte, Haatem, Givemethebeatboys, Rashabar, Unquestionable'),
  30000034: horses('Constitution Hill, Jonbon, Marine Nationale, Sir Gino, Mystical Power, Ballyburn'),
};

export function demoItems(now: Date): DemoItem[] {
  // Whole minutes, so start times read like a schedule.
  const base = Math.floor(now.getTime() / 60_000) * 60_000;
  const event = (eid: number, li: number, na: string, hours: number, state: State, liveTv = false): DemoEvent => {
    const league = LEAGUES.find((l) => l.li === li);
    if (!league) throw new Error(`demo event ${eid}: unknown league ${li}`);
    return {
      kind: 'event', eid, na, st: new Date(base + hours * HOUR).toISOString(),
      go: state === 'done', ip: state === 'live', si: league.si, li,
      tv: liveTv ? liveTvFor(eid) : null,
    };
  };

  const events: DemoEvent[] = [
    event(30000001, 4001, 'India v Australia', -1.5, 'live', true),
    event(30000002, 4001, 'India v England', -26, 'done'),
    event(30000003, 4002, 'Mumbai Indians v Chennai Super Kings', -6, 'done'),
    event(30000004, 4002, 'Royal Challengers Bengaluru v Kolkata Knight Riders', 3, 'soon', true),
    event(30000005, 4003, 'Sydney Sixers v Melbourne Stars', -30, 'done'),
    event(30000006, 4003, 'Perth Scorchers v Brisbane Heat', 6, 'soon'),
    event(30000007, 4002, 'Delhi Capitals v Rajasthan Royals', 9, 'soon'),
    event(30000011, 1001, 'Arsenal v Chelsea', -0.75, 'live', true),
    event(30000012, 1001, 'Liverpool v Manchester City', 2, 'soon', true),
    event(30000013, 1001, 'Manchester United v Tottenham Hotspur', -22, 'done'),
    event(30000014, 1002, 'Real Madrid v Barcelona', -0.5, 'live', true),
    event(30000015, 1002, 'Atletico Madrid v Sevilla', 5, 'soon'),
    event(30000016, 1002, 'Valencia v Villarreal', -48, 'done'),
    event(30000021, 2001, 'Carlos Alcaraz v Jannik Sinner', -0.75, 'live', true),
    event(30000022, 2001, 'Novak Djokovic v Alexander Zverev', 4, 'soon'),
    event(30000023, 2001, 'Daniil Medvedev v Casper Ruud', -20, 'done'),
    event(30000024, 2002, 'Iga Swiatek v Aryna Sabalenka', -0.25, 'live', true),
    event(30000025, 2002, 'Coco Gauff v Elena Rybakina', 6, 'soon'),
    event(30000026, 2002, 'Jessica Pegula v Ons Jabeur', -25, 'done'),
    event(30000031, 7001, 'Queen Anne Stakes', 0, 'live', true),
    event(30000032, 7001, 'Coventry Stakes', 0.5, 'soon'),
    event(30000033, 7001, "King's Stand Stakes", -1, 'done'),
    event(30000034, 7002, "Supreme Novices' Hurdle", 1.5, 'soon'),
    event(30000035, 7002, 'Cheltenham Gold Cup', -25, 'done'),
  ];

  const markets: DemoMarket[] = [
    ...everyCricketType(30000001),
    ...[
      ...cricketCore(30000002, IND, ENG),
      market(30000002, 3, 'tied-match', 'Tied Match', { r: [YES, NO] }),
      session(30000002, 4, 1, '6 Over Runs IND'),
      session(30000002, 5, 2, '20 Over Runs IND'),
      market(30000002, 6, 'odd-even', '6 Over Runs IND Odd', { di: 3 }),
      market(30000002, 7, 'khadometer', 'Khadometer 20 Over IND', { di: 4 }),
      market(30000002, 8, 'other-market', 'Total Match Sixes'),
    ].map(closed),
    ...[...cricketCore(30000003, MI, CSK), session(30000003, 3, 1, '6 Over Runs MI')].map(closed),
    ...[
      // Settled on the wrong winner and recalled (see its result).
      market(30000005, 1, 'match-odd', 'Match Odds', { r: [SIX, STA], rt: true }),
      market(30000005, 2, 'bookmaker2', 'Bookmaker 2', { r: [SIX, STA] }),
      session(30000005, 3, 1, '20 Over Runs SIX'),
    ].map(closed),

    ...soccer(30000011, rn(1101, 'Arsenal'), rn(1102, 'Chelsea'), [0.5, 1.5, 2.5, 3.5]),
    ...soccer(30000013, rn(1105, 'Manchester United'), rn(1106, 'Tottenham Hotspur'), [1.5, 2.5]).map(closed),
    ...soccer(30000016, rn(1205, 'Valencia'), rn(1206, 'Villarreal'), [1.5, 2.5]).map(closed),

    ...tennis(30000021, rn(2101, 'Carlos Alcaraz'), rn(2102, 'Jannik Sinner'), true),
    ...tennis(30000023, rn(2105, 'Daniil Medvedev'), rn(2106, 'Casper Ruud')).map(closed),
    ...tennis(30000026, rn(2205, 'Jessica Pegula'), rn(2206, 'Ons Jabeur')).map(closed),

    ...race(30000031, 'Paddington, Inspiral, Big Rock, Mostahdaf, Charyn, Facteur Cheval, Chaldean'),
    ...race(30000033, "Bradsell, Highfield Princess, Asfoora, Big Evs, Live In The Dream, Believing, Dramatised").map(closed),
    ...race(30000035, "Galopin Des Champs, Gerri Colombe, Fastorslow, L'Homme Presse, Bravemansgame, Shishkin, Hewick, Corach Rambler").map(closed),

    // The fixture slots' first fixtures, in the markets every fixture of the slot lists.
    ...SLOTS.flatMap((slot) => fixtureMarkets(slot, FIRST[slot.eid]).map((m) => {
      // In play already, so nothing waits for the start; and one pre-match market carries a note.
      if (events.some((e) => e.eid === slot.eid && e.ip)) return { ...m, s: true };
      return m.mid === marketIdOf(30000004, 1) ? { ...m, if: 'Rain delay expected' } : m;
    })),
  ];

  // Rids in results point at runners above: 101 India, 1105 Man Utd, 9000 the draw, 9011/9012 over/under.
  const results: DemoResult[] = [
    result(marketIdOf(30000001, 1), ''), // still in play: nothing settled yet
    result(marketIdOf(30000001, 8), '58'),
    result(marketIdOf(30000001, 15), 'lay'), // 58 is even, so laying "odd" won
    result(marketIdOf(30000001, 19), '4'),
    result(marketIdOf(30000002, 1), '101'),
    result(marketIdOf(30000002, 2), '101'),
    result(marketIdOf(30000002, 3), '9002'),
    result(marketIdOf(30000002, 4), '52'),
    result(marketIdOf(30000002, 5), '187'),
    result(marketIdOf(30000002, 6), 'lay'),
    result(marketIdOf(30000002, 7), 'back'),
    result(marketIdOf(30000002, 8), '14'),
    result(marketIdOf(30000003, 1), 'Abandoned', { ia: true }),
    result(marketIdOf(30000003, 2), 'Abandoned', { ia: true }),
    result(marketIdOf(30000003, 3), 'Abandoned', { ia: true }),
    result(marketIdOf(30000005, 1), '122', { rt: true }),
    result(marketIdOf(30000005, 2), '121'),
    result(marketIdOf(30000005, 3), '171'),
    result(marketIdOf(30000013, 1), '1105'),
    result(marketIdOf(30000013, 2), '9011'),
    result(marketIdOf(30000013, 3), '9011'),
    result(marketIdOf(30000016, 1), '9000'),
    result(marketIdOf(30000016, 2), '9011'),
    result(marketIdOf(30000016, 3), '9012'),
    result(marketIdOf(30000023, 1), '2106'),
    result(marketIdOf(30000023, 2), '2105'),
    result(marketIdOf(30000026, 1), '2205'),
    result(marketIdOf(30000026, 2), '2205'),
    result(marketIdOf(30000033, 1), '7333'),
    result(marketIdOf(30000035, 1), '7351'),
  ];

  // The live race's field has a non-runner, withdrawn forty minutes before the off with its reduction factor.
  const nonRunner: NonRunner = { rid: 7315, at: base - 40 * 60_000 };
  const terms = markets.filter((m) => !m.go).map((m) => {
    const e = events.find((x) => x.eid === m.eid)!;
    return termsOf(m, { si: e.si, li: e.li, ip: e.ip }, m.eid === 30000031 ? nonRunner : undefined);
  });

  return [
    ...SPORTS.map((s): DemoItem => ({ kind: 'sport', ...s })),
    ...LEAGUES.map((l): DemoItem => ({ kind: 'league', ...l })),
    ...events,
    ...markets,
    ...terms,
    ...results,
  ];
}

/**
 * The market IDs of the demo data set, nested ones included: the only markets the demo moves.
 * They do not depend on the time, and a fixture slot's next fixture lists its slot's IDs again.
 */
export function demoMarketIds(): ReadonlySet<string> {
  return new Set(demoItems(new Date(0)).flatMap((i) => (i.kind === 'market' ? [i.mid, ...(i.m ?? []).map((n) => n.mid)] : [])));
}
