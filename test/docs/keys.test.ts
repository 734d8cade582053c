/**
 * The REST keys as docs/openapi.json and docs/asyncapi.yaml describe them, against the REST
 * interface's field tables: every property that carries a REST key names the key's meaning in its
 * description, and its type is the key's type. The tables are copied here as data (object, key,
 * meaning, type), as the interface gives them; a schema that describes a key otherwise (`s` as
 * "Suspended", say) fails here.
 */
import t from 'tap';
import { readFileSync } from 'node:fs';
import { parse as parseYaml } from 'yaml';

type Obj = Record<string, any>;

/** The interface's types, and what a key of each may be in JSON Schema: its `type`s (undefined: any value). */
const TYPES: Record<string, readonly string[] | undefined> = {
  integer: ['integer'],
  string: ['string'],
  boolean: ['boolean'],
  number: ['number'],
  'string or null': ['string', 'null'],
  'null or value': undefined,
  'array of Runner': ['array'],
  'array of Nested market': ['array'],
};
type KeyType = 'integer' | 'string' | 'boolean' | 'number' | 'string or null' | 'null or value' | 'array of Runner' | 'array of Nested market';

/** The interface's field tables: per object, each key with its meaning and type. */
const INTERFACE: Record<string, [key: string, meaning: string, type: KeyType][]> = {
  Sport: [['si', 'sportId', 'integer'], ['na', 'name', 'string'], ['a', 'boolean flag present on each sport', 'boolean']],
  Event: [
    ['eid', 'eventId', 'integer'], ['na', 'event name or title', 'string'], ['le', 'league or tournament name', 'string'],
    ['st', 'scheduled start time', 'string'], ['go', 'gameOver', 'boolean'], ['ip', 'inPlay', 'boolean'], ['si', 'sportId', 'integer'],
    ['li', 'league ID', 'integer'], ['tv', 'live TV', 'string or null'],
  ],
  Market: [
    ['mid', 'marketId', 'string'], ['eid', 'eventId', 'integer'], ['na', 'market name', 'string'], ['si', 'sportId', 'integer'],
    ['s', 'isActive', 'boolean'], ['go', 'gameOver', 'boolean'], ['ty', 'market type', 'string'], ['rt', 'recallMarket', 'boolean'],
    ['if', 'infoComments', 'null or value'], ['di', 'displayId', 'integer'], ['bl', 'ballNumber', 'number'], ['r', 'runners', 'array of Runner'],
    ['m', 'nested markets', 'array of Nested market'],
  ],
  Runner: [['rid', 'runnerId (runner or player ID, unique)', 'integer'], ['na', 'runner or player name', 'string']],
  'Nested market': [
    ['mid', 'nested market ID', 'string'], ['s', 'nested market active status', 'boolean'], ['go', 'nested market game-over flag', 'boolean'],
    ['r', 'runners or players of the nested market', 'array of Runner'], ['if', 'info comments', 'null or value'],
  ],
  'Market result': [['mid', 'marketId', 'string'], ['mt', 'marketType', 'string'], ['res', 'result', 'string'], ['rt', 'recalled', 'boolean'], ['ia', 'isAbandoned', 'boolean']],
  'Unsubscribe reply': [['status', 'statusCode', 'integer'], ['message', 'confirmation text naming the unsubscribed market IDs', 'string']],
  'Health reply': [['message', 'a text stating that the server is running', 'string']],
};

/**
 * Which schema of which document carries which object's keys. `all`: every key of the object is
 * a property (an answer); otherwise the schema carries some of them (a frame, an ingest item).
 * Ingest items may also take null for a key (it clears the key).
 */
const CARRIERS: { doc: 'openapi' | 'asyncapi'; schema: string; object: string; all?: true; item?: true }[] = [
  { doc: 'openapi', schema: 'Sport', object: 'Sport', all: true },
  { doc: 'openapi', schema: 'Event', object: 'Event', all: true },
  { doc: 'openapi', schema: 'Market', object: 'Market', all: true },
  { doc: 'openapi', schema: 'Runner', object: 'Runner', all: true },
  { doc: 'openapi', schema: 'NestedMarket', object: 'Nested market', all: true },
  { doc: 'openapi', schema: 'Result', object: 'Market result', all: true },
  { doc: 'openapi', schema: 'Done', object: 'Unsubscribe reply', all: true },
  { doc: 'openapi', schema: 'Note', object: 'Health reply', all: true },
  { doc: 'openapi', schema: 'SportItem', object: 'Sport', item: true },
  { doc: 'openapi', schema: 'EventItem', object: 'Event', item: true },
  { doc: 'openapi', schema: 'MarketItem', object: 'Market', item: true },
  { doc: 'openapi', schema: 'RunnerItem', object: 'Runner', item: true },
  { doc: 'openapi', schema: 'NestedMarketItem', object: 'Nested market', item: true },
  { doc: 'openapi', schema: 'ResultItem', object: 'Market result', item: true },
  { doc: 'asyncapi', schema: 'MarketState', object: 'Market' },
  { doc: 'asyncapi', schema: 'Result', object: 'Market result' },
];

/** What an array of each object must hold: its schema, or its ingest item's. */
const ELEMENTS: Record<string, string[]> = { 'array of Runner': ['Runner', 'RunnerItem'], 'array of Nested market': ['NestedMarket', 'NestedMarketItem'] };

const read = (name: string) => readFileSync(new URL(`../../../docs/${name}`, import.meta.url).pathname, 'utf8');
const DOCS: Record<'openapi' | 'asyncapi', Obj> = { openapi: JSON.parse(read('openapi.json')), asyncapi: parseYaml(read('asyncapi.yaml')) };

const refName = (ref: string): string => ref.split('/').pop()!;

/** A property's JSON types, through `$ref`s and a lone `allOf` of one; undefined when any value is allowed. */
function typesOf(doc: Obj, prop: Obj): string[] | undefined {
  if (prop.$ref) return typesOf(doc, doc.components.schemas[refName(prop.$ref)]);
  if (prop.allOf?.length === 1) return typesOf(doc, prop.allOf[0]);
  if (prop.type !== undefined) return [prop.type].flat();
  const values: unknown[] | undefined = prop.const !== undefined ? [prop.const] : prop.enum;
  if (!values) return undefined;
  return [...new Set(values.map((v) => (Number.isInteger(v) ? 'integer' : v === null ? 'null' : typeof v)))];
}

/** What is wrong with a schema's properties against the object's table. */
function problems(c: (typeof CARRIERS)[number]): string[] {
  const doc = DOCS[c.doc];
  const schema = doc.components.schemas[c.schema] as Obj | undefined;
  if (!schema?.properties) return [`${c.doc} has no schema ${c.schema}`];
  const out: string[] = [];
  for (const [key, meaning, type] of INTERFACE[c.object]) {
    const prop = schema.properties[key] as Obj | undefined;
    const where = `${c.doc} ${c.schema}.${key}`;
    if (!prop) {
      if (c.all) out.push(`${where} is missing`);
      continue;
    }
    const description = String(prop.description ?? '');
    if (!description.toLowerCase().includes(meaning.toLowerCase())) out.push(`${where}: the description "${description}" does not name its meaning, ${meaning}`);
    const expected = TYPES[type];
    const actual = typesOf(doc, prop);
    const allowed = expected && c.item ? [...expected, 'null'] : expected;
    if (expected === undefined ? actual !== undefined : !actual || !actual.every((x) => allowed!.includes(x)) || !expected.every((x) => actual.includes(x))) {
      out.push(`${where}: type ${JSON.stringify(actual ?? 'any')}, the interface says ${type}`);
    }
    const elements = ELEMENTS[type];
    if (elements && !elements.includes(refName(prop.items?.$ref ?? ''))) out.push(`${where}: items are ${prop.items?.$ref ?? 'not named'}, the interface says ${type}`);
  }
  return out;
}

t.test('every REST key in OpenAPI and AsyncAPI names its meaning and has its type, as the interface\'s field tables say', async (t) => {
  for (const c of CARRIERS) t.same(problems(c), [], `${c.doc} ${c.schema} (${c.object})`);
});

t.test('s is active everywhere: no schema describes it as suspended', async (t) => {
  for (const c of CARRIERS) {
    const s = DOCS[c.doc].components.schemas[c.schema].properties.s as Obj | undefined;
    if (s) t.notMatch(String(s.description), /suspend/i, `${c.doc} ${c.schema}.s`);
  }
});

t.test('the check bites: a wrong meaning, a wrong type, a missing key', async (t) => {
  const market = DOCS.openapi.components.schemas.Market.properties;
  const saved = structuredClone(market);
  t.teardown(() => Object.assign(market, saved));
  market.s.description = 'Suspended';
  market.di = { type: 'string', description: 'displayId' };
  delete market.bl;
  t.same(problems(CARRIERS.find((c) => c.schema === 'Market')!), [
    'openapi Market.s: the description "Suspended" does not name its meaning, isActive',
    'openapi Market.di: type ["string"], the interface says integer',
    'openapi Market.bl is missing',
  ]);
});
