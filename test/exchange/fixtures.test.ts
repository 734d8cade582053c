/**
 * The generator's recordings are books a trader would recognise (docs/ingest.md tells users to
 * make one to try a replay): the chances the best prices imply sum to about the market's
 * winners, at the start and all through, not to 160%.
 */
import t from 'tap';
import { matchOdds, race, tennis } from './fixtures.js';

type Obj = Record<string, unknown>;

/** The books as the stream builds them: full ladders (atb/atl) or best-offer positions (batb/batl), by runner. */
function books(messages: Obj[]): { mid: string; back: number; lay: number }[] {
  const ladders = new Map<string, { back: Map<number, number>; lay: Map<number, number>; active: boolean }>();
  const out: { mid: string; back: number; lay: number }[] = [];
  for (const m of messages) {
    for (const mc of m.mc as Obj[]) {
      const mid = mc.id as string;
      if (mc.img) for (const k of [...ladders.keys()].filter((k) => k.startsWith(`${mid}/`))) ladders.delete(k);
      const def = mc.marketDefinition as { runners: { id: number; status: string }[]; status: string } | undefined;
      for (const rc of (mc.rc ?? []) as Obj[]) {
        const key = `${mid}/${rc.id as number}`;
        const l = ladders.get(key) ?? { back: new Map(), lay: new Map(), active: true };
        ladders.set(key, l);
        for (const [field, side] of [['atb', l.back], ['atl', l.lay]] as const) {
          for (const [p, s] of (rc[field] ?? []) as [number, number][]) (s ? side.set(p, s) : side.delete(p));
        }
        for (const [field, side] of [['batb', l.back], ['batl', l.lay]] as const) {
          const moved = (rc[field] ?? []) as [number, number, number][];
          if (!moved.length) continue;
          const levels = [...side].sort((a, b) => (field === 'batb' ? b[0] - a[0] : a[0] - b[0]));
          for (const [pos, p, s] of moved) levels[pos] = [p, s];
          side.clear();
          for (const [p, s] of levels.filter((x) => x && x[1] > 0)) side.set(p, s);
        }
      }
      for (const r of def?.runners ?? []) {
        const l = ladders.get(`${mid}/${r.id}`);
        if (l) l.active = r.status === 'ACTIVE';
      }
      if (def && def.status !== 'OPEN') continue;
      const runners = [...ladders].filter(([k, l]) => k.startsWith(`${mid}/`) && l.active).map(([, l]) => l);
      if (runners.some((l) => !l.back.size || !l.lay.size)) continue;
      out.push({
        mid,
        back: runners.reduce((sum, l) => sum + 1 / Math.max(...l.back.keys()), 0),
        lay: runners.reduce((sum, l) => sum + 1 / Math.min(...l.lay.keys()), 0),
      });
    }
  }
  return out;
}

t.test('every book of every recording sums to about its winners, lays just under and backs just over', async (t) => {
  const cases = [['soccer match odds', matchOdds(2000), { '1.240000001': 1 }], ['tennis', tennis(1000), { '1.240000201': 1 }], ['race win and place', race(1000), { '1.240000101': 1, '1.240000102': 3 }]] as const;
  for (const [name, messages, winners] of cases) {
    const seen = books(messages as Obj[]);
    t.ok(seen.length > 100, `${name}: ${seen.length} books`);
    for (const [mid, n] of Object.entries(winners)) {
      const mine = seen.filter((b) => b.mid === mid);
      const lay = mine.map((b) => b.lay / n);
      const back = mine.map((b) => b.back / n);
      t.comment(`${name} ${mid}: lay book ${(100 * Math.min(...lay)).toFixed(1)}% to ${(100 * Math.max(...lay)).toFixed(1)}%, back book ${(100 * Math.min(...back)).toFixed(1)}% to ${(100 * Math.max(...back)).toFixed(1)}%`);
      // The best lay is at or above a runner's price and the best back below it: the lays' book just under 100%, the backs' just over.
      t.ok(Math.min(...lay) >= 0.94 && Math.max(...lay) <= 1.04, `${name} ${mid}: the lays' book stays between 94% and 104% of its winners`);
      t.ok(Math.min(...back) >= 0.96 && Math.max(...back) <= 1.08, `${name} ${mid}: the backs' book stays between 96% and 108%`);
    }
  }
});
