import t from 'tap';
import { Ledger } from '../../src/exchange/ledger.js';
import { Translator } from '../../src/exchange/translate.js';
import type { IngestItemInput } from '../../src/odds/messages.js';
import { TROUBLED, troubledDay } from './real-forms.js';
import { expectedImages } from './reference-book.js';

type Obj = Record<string, unknown>;

/** What a message's items tell of the market: its image, a stale mark, nothing, or several (never wanted). */
function of(items: IngestItemInput[], mid: string): string {
  const mine = items.filter((i) => i.mid === mid && (i.kind === 'odds' || i.kind === 'stale'));
  if (mine.length > 1) return `${mine.length} items`;
  const [i] = mine;
  if (!i) return 'nothing';
  return i.kind === 'stale' ? `stale ${i.why as string}` : i.late ? 'late image' : 'image';
}

t.test('the real forms read; a bad value costs only its market, and only until its next good image', async (t) => {
  const { healthy, all } = troubledDay();
  const ledger = new Ledger();
  const tr = new Translator({ ledger });
  const got = new Map<string, Obj[]>();
  const stale = new Map<string, string[]>();
  const problems: string[] = [];
  for (const [n, line] of all.entries()) {
    const out = tr.translate(JSON.parse(line.text), `day:${n + 1}`);
    problems.push(...out.problems);
    if (line.expect) t.equal(of(out.items, TROUBLED), line.expect, line.text.slice(0, 100));
    for (const item of out.items) {
      const mid = item.mid as string;
      if (mid === TROUBLED) continue;
      if (item.kind === 'stale') stale.set(mid, [...(stale.get(mid) ?? []), item.why as string]);
      if (item.kind !== 'odds') continue;
      const { kind: _, late: __, ...image } = item;
      const list = got.get(mid) ?? [];
      // The image sent again when lateness clears repeats the one before: the book did not move.
      if (JSON.stringify(list.at(-1)) !== JSON.stringify(image)) list.push(image);
      got.set(mid, list);
    }
  }
  t.match(problems, [/^day:\d+: mc\[0\]\.rc\[0\]\.atb\[0\] must be \[price, size\]$/], 'the one change that could not be applied, named');
  for (const messages of healthy) {
    const mid = (messages[0].mc as Obj[])[0].id as string;
    t.strictSame(got.get(mid), expectedImages(messages).get(mid), `${mid}: every image exact`);
    t.same(stale.get(mid), ['late'], `${mid}: stale only while the exchange flagged its data late`);
    t.same(ledger.get(mid), undefined, `${mid}: nothing withheld or unapplied`);
  }
  t.match(ledger.get(TROUBLED), { withheld: 4, unapplied: 1, why: /r\[0\] is crossed, back 3 against lay 2\.96: best back must be below best lay/ });
  t.same(tr.unreliable().size, 0, 'the fresh image mended the book');
  t.same([...tr.skipped], [['connection', 1], ['status', 1]]);
});
