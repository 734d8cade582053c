import { isMarketId, isPositiveId } from '../refdata/ids.js';
import type { MarketChangeMessage } from './stream.js';

/**
 * Checks parsed stream messages before anything of them is applied, in two steps so one bad
 * market costs only itself: the message's header (`checkMessage`), then each market change on its
 * own (`checkChange`). Only the keys the adapter carries are checked: starting prices (`spn`,
 * `spf`, `spb`, `spl`, which Betfair also writes as the strings "NaN" and "Infinity"), `bsp`,
 * `hc`, `con` and any key the stream adds later are skipped whatever their form.
 */
type Obj = Record<string, unknown>;

/** Far above any real market; keeps one line from holding the heap. */
export const LIMITS = { marketChanges: 10_000, runners: 500, levels: 10_000 } as const;

const MARKET_STATUSES = ['INACTIVE', 'OPEN', 'SUSPENDED', 'CLOSED'];
const RUNNER_STATUSES = ['ACTIVE', 'WINNER', 'LOSER', 'PLACED', 'REMOVED_VACANT', 'REMOVED', 'HIDDEN'];
/** The ladders the book keeps; `spb`/`spl` (starting price books) are not carried. */
const LADDERS_BY_PRICE = ['atb', 'atl', 'trd'];
const LADDERS_BY_POSITION = ['batb', 'batl', 'bdatb', 'bdatl'];

const isObj = (v: unknown): v is Obj => !!v && typeof v === 'object' && !Array.isArray(v);
const isNum = (v: unknown): v is number => typeof v === 'number' && Number.isFinite(v);
const isDigits = (v: unknown): v is string => typeof v === 'string' && isPositiveId(Number(v)) && /^[1-9]\d*$/.test(v);

function ladder(v: unknown, at: string, byPosition: boolean): string | undefined {
  if (!Array.isArray(v) || v.length > LIMITS.levels) return `${at} must be an array of at most ${LIMITS.levels} levels`;
  const shape = byPosition ? '[position, price, size]' : '[price, size]';
  for (const [i, level] of v.entries()) {
    if (!Array.isArray(level) || level.length !== (byPosition ? 3 : 2) || !level.every(isNum)) return `${at}[${i}] must be ${shape}`;
    const [price, size] = byPosition ? level.slice(1) : level;
    if (byPosition && !(Number.isInteger(level[0]) && level[0] >= 0 && level[0] < LIMITS.levels)) return `${at}[${i}] position must be a whole number from 0`;
    // A removal by position carries price 0: [2, 0, 0]. A line market's price is its line, 0 runs
    // included; a runner market's odds are held to the service's price rule when published.
    if (size < 0 || (size > 0 && !(price >= 0))) return `${at}[${i}] must have a size of 0 or more, and a price of 0 or more when the size is not 0`;
  }
  return undefined;
}

function runnerChange(v: unknown, at: string): string | undefined {
  if (!isObj(v)) return `${at} must be an object`;
  if (!isPositiveId(v.id)) return `${at}.id must be a positive selection ID`;
  for (const key of [...LADDERS_BY_PRICE, ...LADDERS_BY_POSITION]) {
    const bad = key in v ? ladder(v[key], `${at}.${key}`, LADDERS_BY_POSITION.includes(key)) : undefined;
    if (bad) return bad;
  }
  for (const key of ['ltp', 'tv']) if (key in v && !isNum(v[key])) return `${at}.${key} must be a number`;
  return undefined;
}

function definition(v: unknown, at: string): string | undefined {
  if (!isObj(v)) return `${at} must be an object`;
  if (!isDigits(v.eventTypeId)) return `${at}.eventTypeId must be a positive ID as text`;
  if (!isDigits(v.eventId)) return `${at}.eventId must be a positive ID as text`;
  if (typeof v.marketType !== 'string') return `${at}.marketType must be text`;
  if (!MARKET_STATUSES.includes(v.status as string)) return `${at}.status must be one of ${MARKET_STATUSES.join(', ')}`;
  if (typeof v.inPlay !== 'boolean') return `${at}.inPlay must be true or false`;
  if (typeof v.openDate !== 'string' || Number.isNaN(Date.parse(v.openDate))) return `${at}.openDate must be a date-time`;
  for (const key of ['name', 'eventName', 'bettingType']) if (v[key] !== undefined && typeof v[key] !== 'string') return `${at}.${key} must be text`;
  if (!Array.isArray(v.runners) || v.runners.length > LIMITS.runners) return `${at}.runners must be an array of at most ${LIMITS.runners} runners`;
  for (const [i, r] of v.runners.entries()) {
    const where = `${at}.runners[${i}]`;
    if (!isObj(r) || !isPositiveId(r.id)) return `${where}.id must be a positive selection ID`;
    if (!RUNNER_STATUSES.includes(r.status as string)) return `${where}.status must be one of ${RUNNER_STATUSES.join(', ')}`;
    if (r.name !== undefined && typeof r.name !== 'string') return `${where}.name must be text`;
    if (r.sortPriority !== undefined && !isNum(r.sortPriority)) return `${where}.sortPriority must be a number`;
  }
  const ids = v.runners.map((r) => (r as Obj).id);
  if (new Set(ids).size !== ids.length) return `${at}.runners repeat a selection ID (handicap lines), which the service cannot carry`;
  return undefined;
}

/** The market ID a change names, when it names a valid one: a bad change of a known market makes that market's book unreliable. */
export const changeMid = (v: unknown): string | undefined => (isObj(v) && isMarketId(v.id) ? v.id : undefined);

/** The first problem of one market change naming its key, or undefined when it can be applied. */
export function checkChange(v: unknown, at: string): string | undefined {
  if (!isObj(v)) return `${at} must be an object`;
  if (!isMarketId(v.id)) return `${at}.id must be a market ID`;
  if ('marketDefinition' in v) {
    const bad = definition(v.marketDefinition, `${at}.marketDefinition`);
    if (bad) return bad;
  }
  if ('img' in v && typeof v.img !== 'boolean') return `${at}.img must be true or false`;
  if ('tv' in v && !isNum(v.tv)) return `${at}.tv must be a number`;
  if (!('rc' in v)) return undefined;
  if (!Array.isArray(v.rc) || v.rc.length > LIMITS.runners) return `${at}.rc must be an array of at most ${LIMITS.runners} runner changes`;
  for (const [i, rc] of v.rc.entries()) {
    const bad = runnerChange(rc, `${at}.rc[${i}]`);
    if (bad) return bad;
  }
  return undefined;
}

/**
 * The message's header: `message` with its changes not yet checked (`checkChange` each);
 * `skip` for a message that carries no market data (the stream's connection and status
 * messages, order and race changes, ops added later), or the problem that makes the whole
 * message unusable.
 */
export type CheckedMessage = { message: MarketChangeMessage & { mc: unknown[] } } | { skip: string } | { error: string };

export function checkMessage(raw: unknown): CheckedMessage {
  if (!isObj(raw) || typeof raw.op !== 'string') return { error: 'must be an object with an op' };
  if (raw.op !== 'mcm') return { skip: raw.op.slice(0, 40) };
  const mc = raw.mc ?? [];
  if (!Array.isArray(mc) || mc.length > LIMITS.marketChanges) return { error: `mc must be an array of at most ${LIMITS.marketChanges} market changes` };
  // A bare status message (`{"op":"mcm","id":2,"status":503}`) carries no time; any change must.
  if (mc.length && !(isNum(raw.pt) && raw.pt >= 0)) return { error: 'pt must be the publish time in milliseconds' };
  if (raw.status !== undefined && raw.status !== null && !isNum(raw.status)) return { error: 'status must be a number or null' };
  return { message: { ...(raw as unknown as MarketChangeMessage), mc } };
}

