/**
 * The demo's match day: the featured events (in play for as long as the demo
 * runs, so the IDs the README and the board use always answer), and the
 * fixture slots that go round: listed ahead, in play, concluded, then listed
 * again under the same event ID as the slot's next fixture, so the data set
 * keeps its size however long the demo runs. Rosters keep runner IDs stable
 * per team, player and race slot.
 */
import type { WireRunner } from '../refdata/wire.js';
import { type DemoMarket, CSK, KKR, MI, NO, RCB, SIX, STA, YES, cricketCore, market, marketIdOf, race, rn, session, soccer, tennis } from './markets.js';

/** One a sport: cricket, soccer, tennis, horse racing. */
export const FEATURED: readonly number[] = [30000001, 30000011, 30000021, 30000031];

/** How a sport's fixtures run, in minutes: in play, shown as concluded, and how far ahead the next is listed. */
interface Timing {
  readonly inPlay: number;
  readonly rest: number;
  readonly lead: readonly [number, number];
}

export const TIMING: Readonly<Record<number, Timing>> = {
  4: { inPlay: 210, rest: 120, lead: [60, 240] },
  1: { inPlay: 115, rest: 120, lead: [30, 180] },
  2: { inPlay: 120, rest: 120, lead: [30, 180] },
  7: { inPlay: 10, rest: 30, lead: [20, 60] },
};

export interface Slot {
  readonly eid: number;
  readonly li: number;
  readonly si: number;
}

const slot = (eid: number, li: number): Slot => ({ eid, li, si: Math.floor(li / 1000) });

/** The events that go round; every other demo event is featured or a concluded example left as it is. */
export const SLOTS: readonly Slot[] = [
  slot(30000004, 4002), slot(30000006, 4003), slot(30000007, 4002),
  slot(30000012, 1001), slot(30000014, 1002), slot(30000015, 1002),
  slot(30000022, 2001), slot(30000024, 2002), slot(30000025, 2002),
  slot(30000032, 7001), slot(30000034, 7002),
];

const ROSTERS: Readonly<Record<number, readonly WireRunner[]>> = {
  4002: [MI, CSK, RCB, KKR, rn(115, 'Delhi Capitals'), rn(116, 'Rajasthan Royals'), rn(117, 'Sunrisers Hyderabad'), rn(118, 'Gujarat Titans')],
  4003: [SIX, STA, rn(123, 'Perth Scorchers'), rn(124, 'Brisbane Heat'), rn(125, 'Adelaide Strikers'), rn(126, 'Hobart Hurricanes')],
  1001: [
    rn(1101, 'Arsenal'), rn(1102, 'Chelsea'), rn(1103, 'Liverpool'), rn(1104, 'Manchester City'),
    rn(1105, 'Manchester United'), rn(1106, 'Tottenham Hotspur'), rn(1107, 'Newcastle United'), rn(1108, 'Aston Villa'),
  ],
  1002: [
    rn(1201, 'Real Madrid'), rn(1202, 'Barcelona'), rn(1203, 'Atletico Madrid'), rn(1204, 'Sevilla'),
    rn(1205, 'Valencia'), rn(1206, 'Villarreal'), rn(1207, 'Real Sociedad'), rn(1208, 'Athletic Club'),
  ],
  2001: [
    rn(2101, 'Carlos Alcaraz'), rn(2102, 'Jannik Sinner'), rn(2103, 'Novak Djokovic'), rn(2104, 'Alexander Zverev'),
    rn(2105, 'Daniil Medvedev'), rn(2106, 'Casper Ruud'), rn(2107, 'Taylor Fritz'), rn(2108, 'Holger Rune'),
  ],
  2002: [
    rn(2201, 'Iga Swiatek'), rn(2202, 'Aryna Sabalenka'), rn(2203, 'Coco Gauff'), rn(2204, 'Elena Rybakina'),
    rn(2205, 'Jessica Pegula'), rn(2206, 'Ons Jabeur'), rn(2207, 'Qinwen Zheng'), rn(2208, 'Jasmine Paolini'),
  ],
};

const RACES: Readonly<Record<number, readonly string[]>> = {
  7001: ['Coventry Stakes', "St James's Palace Stakes", "Prince of Wales's Stakes", 'Gold Cup', 'Commonwealth Cup', 'Diamond Jubilee Stakes'],
  7002: ["Supreme Novices' Hurdle", 'Champion Hurdle', 'Queen Mother Champion Chase', 'Stayers Hurdle', 'Ryanair Chase', 'Triumph Hurdle'],
};

const HORSES = [
  'River Tiber', 'Bucanero Fuerte', 'Haatem', 'Rashabar', 'Unquestionable', 'Notable Speech', 'Rosallion', 'Auguste Rodin',
  'City Of Troy', 'Kyprios', 'Trawlerman', 'Jonbon', 'Marine Nationale', 'Sir Gino', 'Mystical Power', 'Ballyburn',
  'Lossiemouth', 'State Man', 'El Fabiolo', 'Teahupoo', 'Fact To File', 'Majborough',
];

/** What a scoreboard calls a side: initials of a long name (RCB), the first three letters of one word (IND). */
const short = (name: string): string => {
  const words = name.split(' ');
  return (words.length > 1 ? words.map((w) => w[0]).join('') : name.slice(0, 3)).toUpperCase();
};

export const liveTvFor = (eid: number): string => `<iframe src="https://tv.example.com/embed/${eid}" width="640" height="360"></iframe>`;

/** Inactive until it starts: what only trades once the toss is made or the match is under way. */
const untilStart = (m: DemoMarket): DemoMarket => ({ ...m, s: false });

/**
 * A slot's markets, always the same IDs for the sport: cricket core, the two match questions and two
 * sessions of the first innings; soccer match odds and two goal lines; tennis match, first set and the
 * games line; a race's win and place markets over `sides`' names.
 */
export function fixtureMarkets(s: Slot, sides: readonly WireRunner[]): DemoMarket[] {
  const [a, b] = sides;
  switch (s.si) {
    case 4:
      return [
        ...cricketCore(s.eid, a, b),
        untilStart(market(s.eid, 3, 'completed-match', 'Completed Match', { r: [YES, NO] })),
        untilStart(market(s.eid, 4, 'tied-match', 'Tied Match', { r: [YES, NO] })),
        session(s.eid, 5, 1, `6 Over Runs ${short(a.na)}`),
        session(s.eid, 6, 2, `20 Over Runs ${short(a.na)}`),
      ];
    case 1:
      return soccer(s.eid, a, b, [1.5, 2.5]);
    case 2:
      return tennis(s.eid, a, b, true).map((m) => (m.mid === marketIdOf(s.eid, 3) ? untilStart(m) : m));
    default:
      return race(s.eid, sides.map((r) => r.na).join(', '));
  }
}

interface Fixture {
  readonly na: string;
  readonly sides: readonly WireRunner[];
}

/** A slot's next fixture, drawn from its league: two sides, or a race with six to eight runners. */
export function drawFixture(s: Slot, random: () => number): Fixture {
  const races = RACES[s.li];
  const pool = races ? HORSES.map((na) => rn(0, na)) : ROSTERS[s.li];
  const shuffled = [...pool];
  for (let i = shuffled.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [shuffled[i], shuffled[j]] = [shuffled[j], shuffled[i]];
  }
  if (races) return { na: races[Math.floor(random() * races.length)], sides: shuffled.slice(0, 6 + Math.floor(random() * 3)) };
  return { na: `${shuffled[0].na} v ${shuffled[1].na}`, sides: shuffled.slice(0, 2) };
}
