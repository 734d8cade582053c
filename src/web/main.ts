/**
 * The live odds board: sports, events and markets over REST, odds over /ws
 * through the repository's client (protobuf unless `?format=json`), with the
 * page's `?key=` as the REST header and the socket's `key` parameter.
 */
import { OddsClient } from '../client/index.js';
import type { WireEvent as Event, WireSport as Sport } from '../refdata/wire.js';
import { Api } from './api.js';
import { Board } from './board.js';
import { Delay } from './delay.js';
import { byId, h } from './dom.js';
import { Header } from './header.js';
import type { Format } from '../lib/encodings.js';
import { DEPTH } from './ladder.js';
import { eventState, mark, ordered, showEvents, showSports } from './nav.js';
import { Results } from './results.js';

/** How often the events of the chosen sport and the markets of the chosen event are read again. */
const REFRESH_MS = 15_000;

const params = new URLSearchParams(location.search);
const key = params.get('key') || undefined;
const elements = {
  format: byId<HTMLSelectElement>('format'), sports: byId('sports'), events: byId('events'), event: byId('event'), markets: byId('markets'), results: byId('results'),
};
const delay = new Delay();
const header = new Header(delay);
const api = new Api(key, (err) => header.failed(err, 'Reference data unavailable, trying again: '));
const board = new Board(elements.markets, new Results(elements.results), delay, (mid) => unknown(mid));
const refused = (err: unknown) => header.failed(err);

let format: Format = params.get('format') === 'json' ? 'json' : 'proto';
let client: OddsClient | undefined;
let sport: number | undefined;
let event: Event | undefined;
/** Moves on with every choice of event, so answers and acks for an earlier one are dropped. */
let choice = 0;
/** Frames of the chosen event count once its subscribe is acked; before that, `unsubscribed` may still be about the last one. */
let armed = false;
/** Markets named by frames and looked up once already; cleared with each choice of event. */
const looked = new Set<string>();
let lookup: ReturnType<typeof setTimeout> | undefined;

/** A client in this format, replacing the one before; it subscribes to the chosen event itself. */
function connect(): void {
  client?.close();
  const c = new OddsClient({ url: `${location.protocol === 'https:' ? 'wss' : 'ws'}://${location.host}/ws`, format, key });
  client = c;
  const mine = <A extends unknown[]>(fn: (...args: A) => void) => (...args: A) => {
    if (client === c) fn(...args);
  };
  c.on('open', mine(() => {
    header.live(format);
    header.feed(c.feed);
    // Markets that concluded while the socket was away got no frame: the list says so.
    if (event) void reload(event.eid, choice);
  }));
  c.on('close', mine((info) => header.closed(info)));
  c.on('feed', mine((m) => header.feed(m.status)));
  c.on('odds', mine((frame, previous) => board.odds(frame, previous, c.book.delay(frame.mid))));
  c.on('freshness', mine((f) => board.freshness(f)));
  c.on('terms', mine((mid, terms) => board.terms(mid, terms)));
  c.on('market', mine((m) => {
    if (armed) board.state(m);
  }));
  c.on('result', mine((r) => {
    if (armed) board.result(r);
  }));
  c.on('unsubscribed', mine((u) => {
    if (armed) board.drop(u.mids);
  }));
  c.on('notice', mine((n) => header.say(n.message)));
  c.on('error', mine((err) => header.failed(err, 'A frame could not be read: ')));
  header.connecting();
  c.connect();
  if (event) subscribe(c, event.eid, choice);
}

function subscribe(c: OddsClient, eid: number, at: number): void {
  c.subscribe({ eids: [eid], depth: DEPTH, delta: true }).then(
    () => {
      if (client === c && choice === at) armed = true;
    },
    (err: unknown) => {
      if (client === c && choice === at) header.failed(err, `Could not subscribe to event ${eid}: `);
    },
  );
}

/** Reads the event's markets and puts the board in line with them; the first time, the results of those already concluded too. */
async function reload(eid: number, at: number, first = false): Promise<void> {
  const stale = () => choice !== at;
  try {
    const markets = await api.markets(eid, stale);
    if (stale()) return;
    board.sync(markets, client?.book, (mid) => client?.freshness(mid) ?? { mid, live: true }, (mid) => client?.terms(mid));
    header.say(undefined);
    if (!first) return;
    const concluded = markets.flatMap((m) => (m.go ? [m.mid] : (m.m ?? []).filter((n) => n.go).map((n) => n.mid)));
    const results = await api.results(concluded, stale);
    if (!stale()) board.settled(results);
  } catch (err) {
    if (!stale()) refused(err);
  }
}

function unknown(mid: string): void {
  if (looked.has(mid) || !event) return;
  looked.add(mid);
  // One read for a burst of new markets.
  lookup ??= setTimeout(() => {
    lookup = undefined;
    if (event) void reload(event.eid, choice);
  }, 500);
}

function remember(): void {
  const url = new URL(location.href);
  if (sport !== undefined) url.searchParams.set('si', String(sport));
  if (event) url.searchParams.set('eid', String(event.eid));
  else url.searchParams.delete('eid');
  url.searchParams.set('format', format);
  history.replaceState(null, '', url);
}

function chooseEvent(e: Event | undefined): void {
  if (e && e.eid === event?.eid) return;
  const before = event;
  event = e;
  choice++;
  armed = false;
  looked.clear();
  board.clear(e !== undefined);
  remember();
  if (before && client) client.unsubscribe({ eids: [before.eid] }).catch(() => undefined);
  if (!e) {
    elements.event.replaceChildren(h('h2', null, 'No events'));
    return;
  }
  mark(elements.events, e.eid);
  const { state, text } = eventState(e);
  elements.event.replaceChildren(h('h2', null, e.na), h('span', { class: 'state', 'data-state': state }, text), ` ${e.le}`);
  if (client) subscribe(client, e.eid, choice);
  void reload(e.eid, choice, true);
}

async function loadEvents(si: number, wanted: number | undefined): Promise<void> {
  const at = choice;
  const events = ordered(await api.events(si, () => sport !== si));
  if (sport !== si) return;
  header.say(undefined);
  const keep = events.find((e) => e.eid === (wanted ?? event?.eid));
  showEvents(elements.events, events, keep?.eid, chooseEvent);
  // A refresh leaves the chosen event alone; a new sport opens its first event.
  if (wanted === undefined && event && at === choice && keep) return;
  chooseEvent(keep ?? events[0]);
}

function chooseSport(s: Sport, wanted?: number): void {
  sport = s.si;
  mark(elements.sports, s.si);
  loadEvents(s.si, wanted).catch(refused);
}

async function start(): Promise<void> {
  elements.format.value = format;
  elements.format.addEventListener('change', () => {
    format = elements.format.value === 'json' ? 'json' : 'proto';
    remember();
    connect();
  });
  connect();
  const sports = (await api.sports()).filter((s) => s.a);
  header.say(undefined);
  const asked = Number(params.get('si'));
  showSports(elements.sports, sports, undefined, (s) => chooseSport(s));
  const first = sports.find((s) => s.si === asked) ?? sports[0];
  if (first) chooseSport(first, Number(params.get('eid')) || undefined);
  else chooseEvent(undefined);
  setInterval(() => {
    if (sport !== undefined) loadEvents(sport, undefined).catch(refused);
    if (event) void reload(event.eid, choice);
  }, REFRESH_MS);
}

start().catch(refused);
