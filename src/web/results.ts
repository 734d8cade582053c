import type { ResultMessage } from '../odds/messages.js';
import { h } from './dom.js';

/** Results kept on screen: the newest, so a long session does not grow the page. */
const MAX_RESULTS = 30;

/** What a result says, in words: abandoned, recalled, or the outcome named by `name` (a runner, a run count). */
export function resultText(r: Pick<ResultMessage, 'res' | 'rt' | 'ia'>, name: (res: string) => string): string {
  if (r.ia) return r.res && r.res !== 'Abandoned' ? `Abandoned (${r.res})` : 'Abandoned';
  if (r.rt) return 'Result recalled';
  return r.res ? name(r.res) : '';
}

/** The results panel: one line per market, newest first; a market settled again replaces its line. */
export class Results {
  private readonly lines = new Map<string, HTMLElement>();

  constructor(private readonly list: HTMLElement) {}

  add(mid: string, market: string, text: string): void {
    this.lines.get(mid)?.remove();
    this.lines.delete(mid);
    const line = h('li', { 'data-mid': mid }, h('span', null, market), h('b', null, text));
    this.lines.set(mid, line);
    this.list.prepend(line);
    for (const [old, el] of this.lines) {
      if (this.lines.size <= MAX_RESULTS) break;
      el.remove();
      this.lines.delete(old);
    }
  }

  clear(): void {
    this.lines.clear();
    this.list.replaceChildren();
  }
}
