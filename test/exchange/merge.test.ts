import t from 'tap';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { merged, type Message } from '../../src/exchange/merge.js';
import { tempDir } from '../helpers/temp-dir.js';
import { BZIP2, hasBzip2 } from './fixtures.js';
import { execFileSync } from 'node:child_process';

const line = (pt: number, tag: string) => JSON.stringify({ op: 'mcm', pt, tag });
const tags = (got: Message[]) => got.map((m) => ('problem' in m ? `problem ${m.problem}` : (m.msg as { tag?: string; op: string }).tag ?? (m.msg as { op: string }).op));

async function all(files: string[], opts: Parameters<typeof merged>[1]): Promise<Message[]> {
  const out: Message[] = [];
  for await (const m of merged(files, opts)) out.push(m);
  return out;
}

t.test('several recordings, plain, .gz and .bz2, merged by publish time; ties to the file named first; lines without a time keep their place', async (t) => {
  const dir = await tempDir(t);
  const a = join(dir, 'a.json');
  const b = join(dir, hasBzip2() ? 'b.json.bz2' : 'b.json');
  const c = join(dir, 'c.json.gz');
  await writeFile(a, [line(10, 'a10'), '{"op":"status","id":2,"status":503}', line(30, 'a30'), 'not json', line(50, 'a50')].join('\n'));
  const bText = Buffer.from([line(5, 'b5'), line(30, 'b30'), line(40, 'b40')].join('\n'));
  await writeFile(b, hasBzip2() ? execFileSync(BZIP2, ['-c'], { input: bText }) : bText);
  await writeFile(c, gzipSync([line(20, 'c20'), line(60, 'c60')].join('\n')));
  const got = await all([a, b, c], { order: 'time', maxOpen: 8 });
  t.same(tags(got), ['b5', 'a10', 'status', 'c20', 'a30', 'problem not JSON (Unexpected token \'o\', "not json" is not valid JSON)', 'b30', 'b40', 'a50', 'c60']);
  t.match(got[5], { where: `${a}:4` }, 'a problem names its file and line');
  t.same(tags(await all([a, b, c], { order: 'time', maxOpen: 8, to: 30 })).filter((x) => !x.startsWith('problem')), ['b5', 'a10', 'status', 'c20', 'a30', 'b30'], 'up to --to');
  t.same(tags(await all([a, b, c], { order: 'files', maxOpen: 8 })).filter((x) => !x.startsWith('problem')), ['a10', 'status', 'a30', 'a50', 'b5', 'b30', 'b40', 'c20', 'c60'], 'one after another');
  t.same(tags(await all([a, b, c], { order: 'time', maxOpen: 2 })).filter((x) => !x.startsWith('problem')), ['b5', 'a10', 'status', 'a30', 'b30', 'b40', 'c20', 'a50', 'c60'],
    'more files than may be open: merged as they open, each in its own order');
});
