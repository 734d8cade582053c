/**
 * Turns what the REST endpoints answer back into ingest items, so one
 * service's responses can seed another. Only the shape of the file is judged
 * here; each element's content is left to validateReference, so one bad
 * element is one rejected item rather than a refused file.
 */
type Obj = Record<string, unknown>;
type Converted = { items: Obj[] } | { error: string };

const EXPECTED = 'expected one of: the sport list [{si, na, a}, ...], the event list {"data": {"<si>": [event, ...]}}, '
  + 'the market list {"data": {"<eid>": [market, ...]}}, the result list [{mid, mt, res, rt, ia}, ...], '
  + 'or an ingest batch {"data": [{"kind": ...}, ...]}';

const isObj = (v: unknown): v is Obj => v !== null && typeof v === 'object' && !Array.isArray(v);

function describeValue(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'an array';
  return typeof v === 'object' ? 'an object' : `a ${typeof v}`;
}

/** Adds the kind to every element; an element that is not an object makes the file unreadable as that list. */
function withKind(list: unknown[], kind: string, where: (i: number) => string): Converted {
  const items: Obj[] = [];
  for (const [i, el] of list.entries()) {
    if (!isObj(el)) return { error: `${where(i)} is ${describeValue(el)}, but every ${kind} in the list must be an object` };
    items.push({ ...el, kind });
  }
  return { items };
}

/** A top-level array: the sport list or the result list, told apart by the first element's ID key. */
function fromArray(list: unknown[]): Converted {
  if (list.length === 0) return { items: [] };
  const first = list[0];
  const kind = !isObj(first) ? undefined : 'mid' in first ? 'result' : 'si' in first && !('eid' in first) ? 'sport' : undefined;
  if (!kind) return { error: `an array whose first element is neither a sport {si, na, a} nor a result {mid, mt, res, rt, ia}; ${EXPECTED}` };
  return withKind(list, kind, (i) => `element ${i}`);
}

/** `{"data": {"<id>": [...]}}`: events keyed by sport or markets keyed by event, told apart by the elements' keys. */
function fromMap(data: Obj): Converted {
  const lists = Object.entries(data);
  for (const [key, list] of lists) {
    if (!Array.isArray(list)) return { error: `data["${key}"] is ${describeValue(list)}, not an array; ${EXPECTED}` };
  }
  const first = lists.map(([, list]) => (list as unknown[])[0]).find((el) => el !== undefined);
  if (first === undefined) return { items: [] };
  const kind = !isObj(first) ? undefined : 'mid' in first ? 'market' : 'eid' in first ? 'event' : undefined;
  if (!kind) return { error: `data maps IDs to arrays whose elements are neither events (eid, ...) nor markets (mid, ...); ${EXPECTED}` };
  const items: Obj[] = [];
  for (const [key, list] of lists) {
    const converted = withKind(list as unknown[], kind, (i) => `data["${key}"][${i}]`);
    if ('error' in converted) return converted;
    items.push(...converted.items);
  }
  return { items };
}

export function itemsFromRest(json: unknown): Converted {
  if (Array.isArray(json)) return fromArray(json);
  if (!isObj(json)) return { error: `the file holds ${describeValue(json)}; ${EXPECTED}` };
  if (!('data' in json)) {
    // Saving an error answer instead of data is an easy mistake; say so.
    if (json.status === 0 && typeof json.message === 'string') return { error: `the file holds an error answer ("${json.message}"), not data` };
    return { error: `an object without a "data" key; ${EXPECTED}` };
  }
  const data = json.data;
  if (Array.isArray(data)) {
    for (const [i, el] of data.entries()) {
      if (!isObj(el)) return { error: `data[${i}] is ${describeValue(el)}, but every item of an ingest batch must be an object with a kind` };
    }
    return { items: data as Obj[] };
  }
  if (isObj(data)) return fromMap(data);
  return { error: `"data" is ${describeValue(data)}; ${EXPECTED}` };
}
