/**
 * A short market stream in the exchange's own message format, written for
 * these tests (no real exchange data): the image of one soccer match-odds
 * market, then price deltas, each with the clk the exchange would stamp it
 * with. The test server plays it; tests compare what the client hands on
 * against it.
 */
export const MARKET_ID = '1.230000001';
export const EVENT_ID = '32000001';
export const RUNNERS = { home: 47972, away: 47973, draw: 58805 } as const;

/** A clk token: opaque to the client, base64 like the exchange's. */
export const clkOf = (n: number): string => Buffer.from(`clk:${n}`).toString('base64');
export const INITIAL_CLK = Buffer.from('initial:1').toString('base64');
/**
 * The exchange's publish time of the script's first image: an hour before the test started, so
 * every later image of a test (the latest some minutes on) is still in the past, as an exchange's
 * are; the services these tests run take an hour-old time as timely (INGEST_LATE_MS), where a
 * real one would mark it late.
 */
const PT = Date.now() - 3_600_000;

export const MARKET_DEFINITION = {
  bspMarket: false, turnInPlayEnabled: true, persistenceEnabled: true, marketBaseRate: 5, eventId: EVENT_ID, eventTypeId: '1',
  numberOfWinners: 1, bettingType: 'ODDS', marketType: 'MATCH_ODDS', marketTime: '2025-11-01T15:00:00.000Z', suspendTime: '2025-11-01T15:00:00.000Z',
  bspReconciled: false, complete: true, inPlay: false, crossMatching: true, runnersVoidable: false, numberOfActiveRunners: 3, betDelay: 0,
  status: 'OPEN', runners: [
    { status: 'ACTIVE', sortPriority: 1, id: RUNNERS.home },
    { status: 'ACTIVE', sortPriority: 2, id: RUNNERS.away },
    { status: 'ACTIVE', sortPriority: 3, id: RUNNERS.draw },
  ],
  regulators: ['MR_INT'], countryCode: 'GB', discountAllowed: true, timezone: 'Europe/London', openDate: '2025-11-01T15:00:00.000Z', version: 4_700_000_001,
};

export const IMAGE = {
  op: 'mcm', id: 2, initialClk: INITIAL_CLK, clk: clkOf(0), conflateMs: 0, heartbeatMs: 500, pt: PT, ct: 'SUB_IMAGE',
  mc: [{
    id: MARKET_ID, img: true, tv: 10250.5, marketDefinition: MARKET_DEFINITION,
    rc: [
      { id: RUNNERS.home, ltp: 2.1, tv: 6100, batb: [[0, 2.08, 120.5], [1, 2.06, 300]], batl: [[0, 2.12, 80], [1, 2.14, 210]] },
      { id: RUNNERS.away, ltp: 3.9, tv: 2900, batb: [[0, 3.85, 40], [1, 3.8, 95]], batl: [[0, 3.95, 55], [1, 4, 130]] },
      { id: RUNNERS.draw, ltp: 3.5, tv: 1250.5, batb: [[0, 3.45, 60]], batl: [[0, 3.55, 75]] },
    ],
  }],
};

/**
 * Deltas 1..8: each moves one price so every one is told apart from the others. Each also clears
 * its runner's second back level, so the book stays one an exchange can show (backs falling from
 * the best, below the lays): the service refuses any other.
 */
export const DELTAS = Array.from({ length: 8 }, (_, i) => {
  const n = i + 1;
  const runner = [RUNNERS.home, RUNNERS.away, RUNNERS.draw][i % 3];
  return {
    op: 'mcm', id: 2, clk: clkOf(n), pt: PT + n * 250,
    mc: [{ id: MARKET_ID, rc: [{ id: runner, batb: [[0, 2 + n / 100, 100 + n], [1, 0, 0]], ltp: 2 + n / 100, trd: [[2 + n / 100, 10 * n]] }] }],
  };
});

/** A change the server splits into three segments: one market change per segment. */
export const SEGMENTED = {
  op: 'mcm', id: 2, clk: clkOf(100), pt: PT + 100_000,
  mc: [
    { id: MARKET_ID, rc: [{ id: RUNNERS.home, batb: [[0, 2.2, 500]] }] },
    { id: MARKET_ID, rc: [{ id: RUNNERS.away, batb: [[0, 3.9, 400]] }] },
    { id: MARKET_ID, rc: [{ id: RUNNERS.draw, batb: [[0, 3.3, 300]] }] },
  ],
};

/** The segments the exchange would send for SEGMENTED: the clk comes with the last one only. */
export function segmentsOf(msg: typeof SEGMENTED): object[] {
  const { clk, mc, ...head } = msg;
  return mc.map((change, i) => ({
    ...head,
    segmentType: i === 0 ? 'SEG_START' : i === mc.length - 1 ? 'SEG_END' : 'SEG',
    ...(i === mc.length - 1 ? { clk } : {}),
    mc: [change],
  }));
}
