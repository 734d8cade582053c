import t from 'tap';
import { Lifecycle } from '../src/lifecycle.js';
import type { Component } from '../src/lib/component.js';

/** A component that writes each start and stop into `said`; `fails` makes its start throw after it began. */
function part(name: string, said: string[], opts: { fails?: boolean; async?: boolean } = {}): Component {
  return {
    name,
    start: () => {
      said.push(`start ${name}`);
      if (opts.fails) throw new Error(`${name} could not start`);
      return opts.async ? Promise.resolve() : undefined;
    },
    stop: () => {
      said.push(`stop ${name}`);
      return opts.async ? Promise.resolve() : undefined;
    },
  };
}

t.test('components start in the order listed and stop in reverse, once however often stop is asked', async (t) => {
  const said: string[] = [];
  const life = new Lifecycle([part('listeners', said), part('postgres', said, { async: true }), part('bus', said), part('readiness', said)]);
  await life.start();
  t.same(said.splice(0), ['start listeners', 'start postgres', 'start bus', 'start readiness']);
  await Promise.all([life.stop(), life.stop()]);
  await life.stop();
  t.same(said, ['stop readiness', 'stop bus', 'stop postgres', 'stop listeners']);
});

t.test('a start that fails stops what started, the one that failed included, in reverse, and the error is thrown', async (t) => {
  const said: string[] = [];
  const life = new Lifecycle([part('listeners', said), part('postgres', said, { async: true }), part('migrations', said, { fails: true }), part('bus', said)]);
  await t.rejects(life.start(), { message: 'migrations could not start' });
  t.same(said, ['start listeners', 'start postgres', 'start migrations', 'stop migrations', 'stop postgres', 'stop listeners'], 'the bus never started, nor stopped');
});

t.test('a start that returns nothing has finished: the next starts in the same turn, nothing waiting a tick', async (t) => {
  const said: string[] = [];
  const life = new Lifecycle([part('freshness', said), part('sweep', said), part('readiness', said)]);
  const started = life.start();
  t.same(said, ['start freshness', 'start sweep', 'start readiness'], 'all started before start() returned');
  await started;
});

t.test('stopped while a start is awaited: what started stops, and nothing starts after', async (t) => {
  const said: string[] = [];
  let release!: () => void;
  const slow: Component = {
    name: 'postgres',
    start: () => {
      said.push('start postgres');
      return new Promise<void>((ok) => (release = ok));
    },
    stop: () => void said.push('stop postgres'),
  };
  const life = new Lifecycle([part('listeners', said), slow, part('bus', said), part('readiness', said)]);
  const starting = life.start();
  const stopping = life.stop();
  release();
  await t.rejects(starting, { message: 'stopped while starting, before bus' });
  await stopping;
  t.same(said, ['start listeners', 'start postgres', 'stop postgres', 'stop listeners'], 'the bus and readiness never started');
});
