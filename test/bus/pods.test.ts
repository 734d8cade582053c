/**
 * The other pods as one pod hears them, by the times they were heard: gone after two missed
 * announcements (with half an interval's grace), reported once, new again when heard, bounded.
 */
import t from 'tap';
import { MAX_PODS, POD_SILENCE_MS, Pods } from '../../src/bus/nats/pods.js';

t.test('a pod silent past two announcements is gone, reported once; heard again it is new', async (t) => {
  const pods = new Pods();
  t.equal(pods.heard('a', 0), 'new');
  t.equal(pods.heard('b', 0), 'new');
  t.equal(pods.heard('a', 1000), 'known');
  t.same(pods.silent(POD_SILENCE_MS), [], 'at the bound, still there');
  t.same(pods.silent(POD_SILENCE_MS + 1), ['b'], 'past it: the one not heard since');
  t.same(pods.silent(10_000), ['a']);
  t.same(pods.silent(20_000), [], 'each reported once');
  t.equal(pods.heard('b', 20_000), 'new', 'a pod back after its silence counts as new');
});

t.test('at most MAX_PODS at once: a pod past them is refused until one goes', async (t) => {
  const pods = new Pods();
  for (let i = 0; i < MAX_PODS; i++) pods.heard(`p${i}`, 0);
  t.equal(pods.heard('late', 0), 'full');
  t.equal(pods.heard('p0', 1000), 'known', 'the known go on being heard');
  pods.silent(POD_SILENCE_MS + 1);
  t.equal(pods.heard('late', POD_SILENCE_MS + 1), 'new', 'room again once the silent went');
});
