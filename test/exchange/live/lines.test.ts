import t from 'tap';
import { LineSplitter } from '../../../src/exchange/live/lines.js';

const feed = (splitter: LineSplitter, ...chunks: string[]): string[] => {
  const lines: string[] = [];
  for (const chunk of chunks) splitter.push(Buffer.from(chunk), (l) => lines.push(l));
  return lines;
};

t.test('splits on CRLF, across chunk boundaries, and skips empty lines', async (t) => {
  const s = new LineSplitter(100);
  t.same(feed(s, '{"a":1}\r\n{"b"', ':2}\r', '\n\r\n{"c":3}\r\n{"d"'), ['{"a":1}', '{"b":2}', '{"c":3}']);
  t.same(feed(s, ':4}\r\n'), ['{"d":4}'], 'the held part joins the next chunk');
});

t.test('keeps multi-byte characters split across chunks whole', async (t) => {
  const s = new LineSplitter(100);
  const bytes = Buffer.from('{"na":"Mönchengladbach"}\r\n');
  const lines: string[] = [];
  s.push(bytes.subarray(0, 9), (l) => lines.push(l));
  s.push(bytes.subarray(9), (l) => lines.push(l));
  t.same(lines, ['{"na":"Mönchengladbach"}']);
});

t.test('a line over the limit throws, after the lines before it were handed on', async (t) => {
  const s = new LineSplitter(11);
  const lines: string[] = [];
  t.throws(() => s.push(Buffer.from('0123456789\r\n' + 'x'.repeat(12)), (l) => lines.push(l)), { code: 'LINE_TOO_LONG', message: /longer than 11 bytes/ });
  t.same(lines, ['0123456789'], 'a line of exactly the limit (its CR counted) passes');
});

t.test('a line growing over the limit across chunks throws, and the splitter starts clean after', async (t) => {
  const s = new LineSplitter(10);
  feed(s, '12345');
  t.throws(() => feed(s, '678901'), { code: 'LINE_TOO_LONG' });
  t.same(feed(s, 'ok\r\n'), ['ok']);
});
