import t, { type Test } from 'tap';
import { createLogger } from '../../src/log.js';
import { ReadModel, type ModelChange } from '../../src/refdata/model.js';
import { ModelSync } from '../../src/refdata/sync.js';

/**
 * The order of the read model's reloads, over a model whose reads the test
 * releases by hand: what Postgres holds is one number (`stored`), a reload
 * reads it when it starts and the model shows what it read when it ends.
 */
class HeldModel extends ReadModel {
  stored = 0;
  shown = 0;
  inFlight = 0;
  mostInFlight = 0;
  readonly passes: { read: number; kind: 'full' | 'keys'; keys: string[]; release(err?: Error): void }[] = [];

  override loadAll(): Promise<ModelChange[]> {
    return this.read('full', []);
  }

  override refresh(_db: unknown, keys: Iterable<string>): Promise<ModelChange[]> {
    return this.read('keys', [...keys]);
  }

  private read(kind: 'full' | 'keys', keys: string[]): Promise<ModelChange[]> {
    const read = this.stored;
    this.mostInFlight = Math.max(this.mostInFlight, ++this.inFlight);
    return new Promise((ok, fail) => this.passes.push({
      read, kind, keys,
      release: (err) => {
        this.inFlight--;
        if (err) return fail(err);
        this.shown = read;
        ok([]);
      },
    }));
  }
}

const turn = () => new Promise((ok) => setImmediate(ok));

function setup(t: Test) {
  const model = new HeldModel();
  const sync = new ModelSync({ query: () => Promise.reject(new Error('unused')) } as never, model, createLogger('error', false, () => undefined));
  t.teardown(() => sync.stop());
  return { model, sync };
}

/** Whether the promise has settled by now, and how. */
function state(p: Promise<unknown>): { settled: boolean; err?: unknown } {
  const s: { settled: boolean; err?: unknown } = { settled: false };
  p.then(() => (s.settled = true), (err: unknown) => Object.assign(s, { settled: true, err }));
  return s;
}

t.test('show waits for a pass that starts after it: one already reading may have read before the commit', async (t) => {
  const { model, sync } = setup(t);
  sync.notify('market:1');
  t.equal(model.passes.length, 1, 'a NOTIFY pass reads the old row');
  model.stored = 1;
  const shown = state(sync.show(['market:1']));
  model.passes[0].release();
  await turn();
  t.notOk(shown.settled, 'the pass that read before the write does not count');
  t.equal(model.passes.length, 2);
  t.equal(model.passes[1].read, 1, 'the next pass reads the write');
  model.passes[1].release();
  await turn();
  t.ok(shown.settled);
  t.equal(model.shown, 1, 'resolved once the model shows the write');
});

t.test('show of a write of several rows, on an idle sync, answers after a pass that read every one of them', async (t) => {
  const { model, sync } = setup(t);
  model.stored = 1;
  const shown = state(sync.show(['sport:1', 'event:2', 'market:3']));
  t.same(model.passes.map((p) => p.keys), [['sport:1', 'event:2', 'market:3']], 'one pass reads all three, not the first alone');
  model.passes[0].release();
  await turn();
  t.ok(shown.settled);
  t.equal(model.passes.length, 1, 'and nothing was left for another pass');
});

t.test('a full reload and targeted ones run one at a time, each reading after the last ended: the model never goes back', async (t) => {
  const { model, sync } = setup(t);
  sync.reloadAll();
  model.stored = 1;
  const first = state(sync.show(['market:1']));
  model.stored = 2;
  sync.notify('market:1');
  const second = state(sync.show(['market:1']));
  t.equal(model.passes.length, 1, 'nothing reads while the full reload does');
  model.passes[0].release();
  await turn();
  t.equal(model.shown, 0);
  t.equal(model.passes.length, 2, 'the writes gathered meanwhile go in one pass');
  t.equal(model.passes[1].read, 2);
  model.stored = 3;
  sync.notify('market:1');
  model.passes[1].release();
  await turn();
  t.ok(first.settled && second.settled);
  t.equal(model.shown, 2);
  model.passes[2].release();
  await turn();
  t.equal(model.shown, 3);
  t.equal(model.mostInFlight, 1, 'never two reads at once');
  t.same(model.passes.map((p) => p.read), [0, 2, 3], 'each pass read what was stored when it started, in order');
});

t.test('a failed pass leaves its writers to the full reload after it: answered by it, or refused with a coded error when it fails too', async (t) => {
  const { model, sync } = setup(t);
  model.stored = 1;
  const first = state(sync.show(['result:1']));
  model.passes[0].release(new Error('connection terminated'));
  await turn();
  t.notOk(first.settled, 'not refused on one failure');
  sync.notify('result:2');
  t.equal(model.passes[1].kind, 'full', 'the next pass is a full reload');
  model.passes[1].release();
  await turn();
  t.ok(first.settled && !first.err, 'answered once the full reload shows the write');
  t.equal(model.shown, 1);

  const second = sync.show(['result:1']);
  model.passes[2].release(new Error('connection terminated'));
  await turn();
  sync.notify('result:2');
  model.passes[3].release(new Error('connection refused'));
  await t.rejects(second, { code: 'DB_UNAVAILABLE', message: /written, but this server could not load it back/ });
});

t.test('stop fails whoever waits for the next pass, and a show after it fails at once; nothing written means nothing to wait for', async (t) => {
  const { model, sync } = setup(t);
  await sync.show([]);
  t.equal(model.passes.length, 0);
  sync.notify('event:1');
  const waiting = sync.show(['event:1']);
  sync.stop();
  await t.rejects(waiting, { code: 'DB_UNAVAILABLE' });
  await t.rejects(sync.show(['event:2']), { code: 'DB_UNAVAILABLE' });
});
