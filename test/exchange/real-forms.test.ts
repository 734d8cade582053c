import t from 'tap';
import { Ledger } from '../../src/exchange/ledger.js';
import { Translator } from '../../src/exchange/translate.js';
import type { IngestItemInput } from '../../src/odds/messages.js';
import { matchOdds } from './fixtures.js';
import { TROUBLED, troubledLines, type Expect } from './real-forms.js';
import { expectedImages } from './reference-book.js';

type Obj = Record<string, unknown>;
const START = Date.UTC(2026, 4, 1, 12, 0, 0);
const HEALTHY = 12;

/** The troubled market's lines among the messages of many healthy markets, in publish-time order. */
function day() {
  const healthy = Array.from({ length: HEALTHY }, (_, i) => matchOdds(80, 100 + i, `1.26000${String(i).padStart(4, '0')}`));
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

/** What a message's items tell of the market: its image, a stale mark, nothing, or several (never wanted). */
function of(items: IngestItemInput[], mid: string): string {
  const mine = items.filter((i) => i.mid === mid && (i.kind === 'odds' || i.kind === 'stale'));
  if (mine.length > 1) return `${mine.length} items`;
  const [i] = mine;
  if (!i) return 'nothing';
  return i.kind === 'stale' ? `stale ${i.why as string}` : i.late ? 'late image' : 'image';
}

t.test('the real forms read; a bad value costs only its market, and only until its next good image', async (t) => {
  const { healthy, all } = day();
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
