import type { WireEvent as Event, WireSport as Sport } from '../refdata/wire.js';
import { h } from './dom.js';

const when = new Intl.DateTimeFormat(undefined, { weekday: 'short', day: 'numeric', month: 'short', hour: '2-digit', minute: '2-digit' });

/** In play first, then upcoming by start time, then concluded, latest first. */
function rank(e: Event): number {
  return e.ip && !e.go ? 0 : e.go ? 2 : 1;
}
export function ordered(events: Event[]): Event[] {
  return [...events].sort((a, b) => rank(a) - rank(b) || (rank(a) === 2 ? b.st.localeCompare(a.st) : a.st.localeCompare(b.st)) || a.eid - b.eid);
}

export function eventState(e: Event): { state: 'live' | 'soon' | 'done'; text: string } {
  if (e.go) return { state: 'done', text: 'Ended' };
  if (e.ip) return { state: 'live', text: 'In play' };
  return { state: 'soon', text: when.format(new Date(e.st)) };
}

/** A list of buttons, one of them chosen (aria-pressed), each calling `choose` with its item. */
function buttons<T>(list: HTMLElement, items: T[], key: (x: T) => number, chosen: number | undefined, draw: (x: T) => (Node | string)[], choose: (x: T) => void): void {
  list.replaceChildren(...items.map((x) => {
    const button = h('button', { type: 'button', 'data-id': String(key(x)), 'aria-pressed': String(key(x) === chosen) }, ...draw(x));
    button.addEventListener('click', () => choose(x));
    return h('li', null, button);
  }));
}

export function showSports(list: HTMLElement, sports: Sport[], chosen: number | undefined, choose: (s: Sport) => void): void {
  buttons(list, sports, (s) => s.si, chosen, (s) => [s.na], choose);
}

const drawnEvents = new WeakMap<HTMLElement, string>();

/** Redraws the events only when they changed, so a refresh keeps the list where the reader scrolled it. */
export function showEvents(list: HTMLElement, events: Event[], chosen: number | undefined, choose: (e: Event) => void): void {
  const drawn = JSON.stringify(events);
  if (drawnEvents.get(list) === drawn) return;
  drawnEvents.set(list, drawn);
  buttons(list, events, (e) => e.eid, chosen, (e) => {
    const { state, text } = eventState(e);
    return [h('span', { class: 'name' }, e.na), h('span', { class: 'meta' }, h('span', { class: 'state', 'data-state': state }, text), ` ${e.le}`)];
  }, choose);
  if (!events.length) list.replaceChildren(h('li', { class: 'empty' }, 'No events'));
}

/** Marks the chosen button without rebuilding the list, and brings it into view (on a phone the list scrolls sideways). */
export function mark(list: HTMLElement, chosen: number): void {
  for (const b of list.querySelectorAll('button')) {
    const on = b.dataset.id === String(chosen);
    b.setAttribute('aria-pressed', String(on));
    if (on) b.scrollIntoView({ block: 'nearest', inline: 'nearest' });
  }
}
