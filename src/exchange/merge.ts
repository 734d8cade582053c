/**
 * The messages of several recordings as one stream, each parsed once. In `time` order (a day
 * of per-market files as the exchange published it) the files are merged by publish time (`pt`):
 * the next message is always the earliest of the files' next ones, ties going to the file named
 * first, and a message without a `pt` (a status line) keeps its place after its file's previous
 * message. At most `maxOpen` files are read at once, opened in name order as others end: a day with
 * more markets open at once than that replays the rest as files end, each market still in its
 * own order. In `files` order each file is read whole after the one before. Messages after `to`
 * end their file's reading (a recording is in time order).
 */
import { linesOf, READ_LIMITS, type ReadLimits } from './files.js';

export type Message = { where: string; pt: number | undefined; msg: unknown } | { where: string; problem: string };

export interface MergeOptions {
  order: 'time' | 'files';
  maxOpen: number;
  /** The last publish time wanted, ms. */
  to?: number;
  limits?: ReadLimits;
}

/** Files read at once by default: enough for a day of racing, each holding at most a bzip2 block (about 6 MB). */
export const DEFAULT_MAX_OPEN = 64;

async function* messagesOf(file: string, limits: ReadLimits): AsyncGenerator<Message> {
  for await (const line of linesOf(file, limits)) {
    const where = `${line.file}:${line.line}`;
    if ('problem' in line) {
      yield { where, problem: line.problem };
      continue;
    }
    let msg: unknown;
    try {
      msg = JSON.parse(line.text);
    } catch (err) {
      yield { where, problem: `not JSON (${(err as Error).message})` };
      continue;
    }
    const pt = (msg as { pt?: unknown } | null)?.pt;
    yield { where, pt: typeof pt === 'number' && Number.isFinite(pt) ? pt : undefined, msg };
  }
}

interface Head {
  messages: AsyncGenerator<Message>;
  next: Message;
  /** The time the next message sorts at. */
  key: number;
}

const keyOf = (m: Message, before: number) => ('pt' in m && m.pt !== undefined ? m.pt : before);

export async function* merged(files: readonly string[], opts: MergeOptions): AsyncGenerator<Message> {
  const limits = opts.limits ?? READ_LIMITS;
  const to = opts.to ?? Infinity;
  if (opts.order === 'files') {
    for (const file of files) {
      for await (const m of messagesOf(file, limits)) {
        if (keyOf(m, -Infinity) > to) break;
        yield m;
      }
    }
    return;
  }
  const heads: Head[] = [];
  let opened = 0;
  const advance = async (head: Head): Promise<void> => {
    const r = await head.messages.next();
    if (r.done || keyOf(r.value, head.key) > to) {
      await head.messages.return(undefined);
      heads.splice(heads.indexOf(head), 1);
      return;
    }
    head.next = r.value;
    head.key = keyOf(r.value, head.key);
  };
  for (;;) {
    while (heads.length < opts.maxOpen && opened < files.length) {
      const head: Head = { messages: messagesOf(files[opened++], limits), next: undefined as never, key: -Infinity };
      heads.push(head);
      await advance(head);
    }
    if (!heads.length) return;
    let first = heads[0];
    for (const h of heads) if (h.key < first.key) first = h;
    yield first.next;
    await advance(first);
  }
}
