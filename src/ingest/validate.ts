import { MARKET_TYPES, type MarketType, type Runner } from '../refdata/types.js';
import { isoInstant } from '../lib/iso-time.js';
import { INGEST_LIMITS } from '../odds/messages.js';
import type { MarketItem, NestedItem, ReferenceItem } from './items.js';
import { Invalid, fail, flag, float, id, integer, marketId, nullable, opt, text, type Obj } from './fields.js';
import { settlement, validateTerms } from './validate-terms.js';

/**
 * Checks the shape of each reference item, as the publisher sent it with the
 * wire's keys, and returns it typed with the domain's names, or the first
 * problem as text naming the field (by its wire key). Whether referenced rows
 * exist is left to the transaction, which sees the database as it is.
 */
const MAX_TEXT = 500;
const MAX_TV = 4096;
const name = text(MAX_TEXT);
const type = (v: unknown, key: string): MarketType =>
  (MARKET_TYPES as readonly unknown[]).includes(v) ? (v as MarketType) : fail(key, `must be one of ${MARKET_TYPES.join(', ')}`);

const EARLIEST = Date.UTC(1900, 0, 1);
const LATEST = Date.UTC(9999, 11, 31, 23, 59, 59, 999);

function isoTime(v: unknown, key: string): string {
  const t = typeof v === 'string' ? isoInstant(v) : undefined;
  if (t === undefined) return fail(key, 'must be an ISO 8601 date-time with a time zone');
  if (Number.isNaN(t)) return fail(key, `must be a date and time that exist: ${v as string} does not`);
  return t < EARLIEST || t > LATEST ? fail(key, 'must be between the years 1900 and 9999') : new Date(t).toISOString();
}

const MAX_INFO = 4096;

/**
 * `if` may be any JSON value, stored as jsonb: it must serialise, stay small,
 * and hold nothing jsonb refuses (NUL, a lone surrogate).
 */
function info(v: unknown, key: string): unknown {
  let json: string | undefined;
  try {
    json = JSON.stringify(v);
  } catch {
    return fail(key, 'must be a JSON value');
  }
  if (json === undefined || json.length > MAX_INFO) return fail(key, `must be a JSON value of at most ${MAX_INFO} characters`);
  if (/\\u0000|\\ud[89a-f][0-9a-f]{2}/i.test(json)) return fail(key, 'must not contain NUL characters or lone surrogates');
  return v;
}

function runners(v: unknown, key: string): Runner[] {
  if (!Array.isArray(v) || v.length > INGEST_LIMITS.runners) fail(key, `must be an array of at most ${INGEST_LIMITS.runners} runners`);
  const seen = new Set<number>();
  return (v as unknown[]).map((r, i) => {
    if (!r || typeof r !== 'object' || Array.isArray(r)) fail(`${key}[${i}]`, 'must be an object {rid, na}');
    const runner = { id: id((r as Obj).rid, `${key}[${i}].rid`), name: name((r as Obj).na, `${key}[${i}].na`) };
    if (seen.has(runner.id)) fail(`${key}[${i}].rid`, `repeats runner ${runner.id}`);
    seen.add(runner.id);
    return runner;
  });
}

function nested(v: unknown, key: string): NestedItem[] {
  if (!Array.isArray(v) || v.length > INGEST_LIMITS.nested) fail(key, `must be an array of at most ${INGEST_LIMITS.nested} nested markets`);
  const seen = new Set<string>();
  return (v as unknown[]).map((n, i) => {
    const at = `${key}[${i}]`;
    if (!n || typeof n !== 'object' || Array.isArray(n)) fail(at, 'must be an object {mid, s, go, r, if}');
    const o = n as Obj;
    const item: NestedItem = { id: marketId(o.mid, `${at}.mid`), isActive: flag(o.s, `${at}.s`), concluded: flag(o.go, `${at}.go`), runners: runners(o.r, `${at}.r`) };
    if (seen.has(item.id)) fail(`${at}.mid`, `repeats nested market ${item.id}`);
    seen.add(item.id);
    if ('if' in o) item.info = info(o.if, `${at}.if`);
    return item;
  });
}

function validateOne(o: Obj): ReferenceItem {
  switch (o.kind) {
    case 'sport':
      return { kind: 'sport', id: id(o.si, 'si'), name: opt(o, 'na', name), active: opt(o, 'a', flag) };
    case 'league':
      return { kind: 'league', id: id(o.li, 'li'), sportId: opt(o, 'si', id), name: opt(o, 'na', name) };
    case 'event':
      return {
        kind: 'event', id: id(o.eid, 'eid'), name: opt(o, 'na', name), leagueName: opt(o, 'le', name), startTime: opt(o, 'st', isoTime),
        concluded: opt(o, 'go', flag), inPlay: opt(o, 'ip', flag), sportId: opt(o, 'si', id), leagueId: opt(o, 'li', id), liveTv: opt(o, 'tv', nullable(text(MAX_TV))),
      };
    case 'market': {
      const m: MarketItem = {
        kind: 'market', id: marketId(o.mid, 'mid'), eventId: opt(o, 'eid', id), name: opt(o, 'na', name), sportId: opt(o, 'si', id),
        isActive: opt(o, 's', flag), concluded: opt(o, 'go', flag), type: opt(o, 'ty', type), recalled: opt(o, 'rt', flag),
        displayOrder: opt(o, 'di', nullable(integer)), ball: opt(o, 'bl', nullable(float)), runners: opt(o, 'r', runners), nested: opt(o, 'm', nested),
        ...('if' in o ? { info: info(o.if, 'if') } : {}),
      };
      if (m.type === 'player-race' && m.runners) fail('r', 'is not allowed on a player-race market: its runners go inside m');
      if (m.type !== undefined && m.type !== 'player-race' && m.nested) fail('m', 'is only allowed on a player-race market');
      if (m.type !== undefined && m.type !== 'ball-by-ball' && m.ball != null) fail('bl', 'is only allowed on a ball-by-ball market');
      if (m.nested?.some((n) => n.id === m.id)) fail('m', 'must not contain the market itself');
      return m;
    }
    case 'result':
      return {
        kind: 'result', marketId: marketId(o.mid, 'mid'), outcome: opt(o, 'res', text(200)), recalled: opt(o, 'rt', flag),
        abandoned: opt(o, 'ia', flag), marketType: opt(o, 'mt', type), settlement: settlement(o),
      };
    case 'terms':
      return validateTerms(o);
    default:
      return fail('kind', 'must be one of sport, league, event, market, result, terms, odds, stale, suspend');
  }
}

/** Drops keys whose value is undefined, so "absent" and "not changed" are the same thing downstream. */
function compact<T extends object>(item: T): T {
  for (const k of Object.keys(item) as (keyof T)[]) if (item[k] === undefined) delete item[k];
  return item;
}

export function validateReference(raw: unknown): { item: ReferenceItem } | { error: string } {
  if (!raw || typeof raw !== 'object' || Array.isArray(raw)) return { error: 'must be an object with a kind' };
  try {
    return { item: compact(validateOne(raw as Obj)) };
  } catch (err) {
    if (err instanceof Invalid) return { error: err.message };
    throw err;
  }
}
