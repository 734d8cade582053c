/**
 * One horse race market written for these tests in the forms Betfair's stream really uses (as
 * its public documentation and the recordings open-source clients test with show them), with the
 * faults a real day brings, line by line as a raw recording holds them: the stream's connection
 * and status lines, numbers written `5.0`, starting prices as the strings "NaN" and "Infinity",
 * fields the service does not carry and fields nobody knows yet, `con` flags, heartbeats, a bare
 * `status: 503` line, a book that crosses, a lay at 1001, an `ltp` of 1e300, a change that cannot
 * be applied, and the `img: true` that mends it. `expect` says what each line must yield for the
 * market: its image (`image`, `late image`), a stale mark, or nothing.
 */
import { matchOdds } from './fixtures.js';

export const TROUBLED = '1.250000001';
export const TROUBLED_EVENT = '35000001';
const [A, B, C] = [61001, 61002, 61003];

export type Expect = 'image' | 'late image' | 'stale unreliable' | 'stale late' | 'nothing';

const DEF = `{"bspMarket":true,"turnInPlayEnabled":true,"persistenceEnabled":true,"marketBaseRate":5.0,"eventId":"${TROUBLED_EVENT}","eventTypeId":"7",`
  + `"numberOfWinners":1,"bettingType":"ODDS","marketType":"WIN","marketTime":"2026-05-01T15:30:00.000Z","suspendTime":"2026-05-01T15:30:00.000Z",`
  + `"bspReconciled":false,"complete":true,"inPlay":false,"crossMatching":true,"runnersVoidable":false,"numberOfActiveRunners":2,"betDelay":0,`
  + `"status":"OPEN","runners":[{"adjustmentFactor":41.2,"status":"ACTIVE","sortPriority":1,"id":${A},"name":"Harbour Light"},`
  + `{"adjustmentFactor":30.1,"status":"ACTIVE","sortPriority":2,"id":${B},"name":"Mill Race"},`
  + `{"adjustmentFactor":12.0,"status":"REMOVED","sortPriority":3,"removalDate":"2026-05-01T09:12:00.000Z","id":${C},"name":"Late Post","bsp":"NaN"}],`
  + `"regulators":["MR_INT"],"venue":"Ludlow","countryCode":"GB","discountAllowed":true,"timezone":"Europe/London","openDate":"2026-05-01T15:30:00.000Z",`
  + `"version":4001,"priceLadderDefinition":{"type":"CLASSIC"},"raceType":"Flat","name":"1m2f Hcap","eventName":"Ludlow 1st May","newKeyNobodyKnows":{"x":[1,2]}}`;

/** When the troubled market's day starts: its first line is a second later. */
export const START = Date.UTC(2026, 4, 1, 12, 0, 0);

/** [line, what it yields for the market], `pt` rising a second a line from `start`. */
export function troubledLines(start: number): [string, Expect][] {
  let pt = start;
  const mcm = (mc: string, extra = '') => `{"op":"mcm","id":2,"clk":"AAg${(pt += 1000).toString(36)}","pt":${pt}${extra},"mc":[${mc}]}`;
  const rc = (body: string) => `{"id":"${TROUBLED}","rc":[${body}]}`;
  return [
    [`{"op":"connection","connectionId":"206-010526120000-123456"}`, 'nothing'],
    [`{"op":"status","id":1,"statusCode":"SUCCESS","connectionClosed":false,"connectionsAvailable":9}`, 'nothing'],
    [mcm(`{"id":"${TROUBLED}","marketDefinition":${DEF},"rc":[`
      + `{"atb":[[3.0,25.5],[2.98,10.0]],"atl":[[3.05,12.0],[3.1,40.0]],"trd":[[3.0,110.5]],"ltp":3.0,"tv":110.5,"spn":"NaN","spf":"Infinity","spb":[[1.01,5.0]],"spl":[[1000,2.5]],"id":${A}},`
      + `{"atb":[[5.0,8.0]],"atl":[[5.2,9.5]],"spn":4.8,"spf":"NaN","id":${B}}],"img":true,"tv":110.5}`, ',"ct":"SUB_IMAGE","initialClk":"G4","conflateMs":0,"heartbeatMs":5000'), 'image'],
    [mcm(rc(`{"atb":[[3.0,30.0]],"spn":3.9,"spf":"Infinity","xyz":{"a":[1]},"id":${A}}`).replace('"rc"', '"con":true,"futureFlag":"x","rc"')), 'image'],
    [`{"op":"mcm","id":2,"clk":"AAgz","pt":${(pt += 1000)},"ct":"HEARTBEAT"}`, 'nothing'],
    // A lay below the best back: a crossed book the service refuses.
    [mcm(rc(`{"atl":[[2.96,10.0]],"id":${A}}`)), 'stale unreliable'],
    [mcm(rc(`{"atl":[[2.96,0]],"id":${A}}`)), 'image'],
    // A lay above the exchange's highest price.
    [mcm(rc(`{"atl":[[1001,4.0]],"id":${B}}`)), 'stale unreliable'],
    [mcm(rc(`{"atb":[[5.0,9.0]],"id":${B}}`)), 'nothing'],
    [mcm(rc(`{"atl":[[1001,0]],"id":${B}}`)), 'image'],
    [mcm(rc(`{"ltp":1e300,"id":${B}}`)), 'stale unreliable'],
    [mcm(rc(`{"ltp":5.1,"trd":[[5.1,2.0]],"id":${B}}`)), 'image'],
    // A change that cannot be applied: the book is unreliable until a fresh image.
    [mcm(rc(`{"atb":[[2.5,"x"]],"id":${A}}`)), 'stale unreliable'],
    [mcm(rc(`{"atb":[[3.0,31.0]],"id":${A}}`)), 'nothing'],
    [mcm(`{"id":"${TROUBLED}","img":true,"rc":[{"atb":[[3.0,31.0]],"atl":[[3.05,12.0]],"ltp":3.0,"id":${A}},{"atb":[[5.0,9.0]],"atl":[[5.2,9.5]],"ltp":5.1,"id":${B}}]}`), 'image'],
    // The exchange flags its data late: with no change, a stale mark; with one, a late image; then well again.
    [`{"op":"mcm","id":2,"status":503}`, 'stale late'],
    [mcm(rc(`{"atb":[[3.0,32.0]],"id":${A}}`), ',"status":503'), 'late image'],
    [`{"op":"mcm","id":2,"clk":"AAh0","pt":${(pt += 1000)},"ct":"HEARTBEAT"}`, 'image'],
    [mcm(rc(`{"atb":[[3.0,33.0]],"spn":"NaN","id":${A}}`)), 'image'],
  ];
}

/** The troubled market's lines among the messages of many healthy markets, in publish-time order. */
export function troubledDay(steps = 80, markets = 12) {
  const healthy = Array.from({ length: markets }, (_, i) => matchOdds(steps, 100 + i, `1.26000${String(i).padStart(4, '0')}`));
  const troubled = troubledLines(START);
  const all: { text: string; key: number; expect?: Expect }[] = [];
  let key = START;
  /** While the exchange flags its data late, every message of the stream carries the flag. */
  const late = { from: Infinity, to: Infinity };
  for (const [text, expect] of troubled) {
    const msg = JSON.parse(text) as { pt?: number; status?: number };
    if (msg.pt !== undefined) key = msg.pt;
    if (msg.status && late.from === Infinity) late.from = key;
    if (!msg.status && late.from < Infinity && late.to === Infinity) late.to = key;
    all.push({ text, key, expect });
  }
  for (const messages of healthy) {
    for (const m of messages) {
      const pt = m.pt as number;
      all.push({ text: JSON.stringify(pt > late.from && pt < late.to ? { ...m, status: 503 } : m), key: pt });
    }
  }
  // A stable sort: lines without a time keep their place after the line before them.
  all.sort((a, b) => a.key - b.key);
  return { healthy, all };
}
