import t from 'tap';
import { Lifecycle } from '../../../src/async/lifecycle.js';

function setup() {
  const log: string[] = [];
  const errors: string[] = [];
  const lifecycle = new Lifecycle({ onStopError: (err, name) => errors.push(`${name}: ${(err as Error).message}`) });
  const part = (name: string, opts: { start?: boolean; failStart?: boolean; failStop?: boolean } = {}) =>
    lifecycle.add({
      name,
      ...(opts.start === false
        ? {}
        : {
            start: async () => {
              log.push(`start ${name}`);
              if (opts.failStart) throw new Error(`${name} cannot start`);
            },
          }),
      stop: async () => {
        log.push(`stop ${name}`);
        if (opts.failStop) throw new Error(`${name} cannot stop`);
      },
    });
  return { log, errors, lifecycle, part };
}

t.test('starts in order, stops in reverse; a second stop waits for the first and stops nothing again', async (t) => {
  const { log, lifecycle, part } = setup();
  part('a');
  part('b', { start: false });
  part('c');
  await lifecycle.start();
  t.same(log, ['start a', 'start c']);
  await Promise.all([lifecycle.stop(), lifecycle.stop()]);
  t.same(log.slice(2), ['stop c', 'stop b', 'stop a']);
});

t.test('a failed start stops what was live before it, in reverse, and rethrows; later parts are never started', async (t) => {
  const { log, lifecycle, part } = setup();
  part('opened', { start: false });
  part('a');
  part('b', { failStart: true });
  part('c');
  await t.rejects(lifecycle.start(), /b cannot start/);
  t.same(log, ['start a', 'start b', 'stop a', 'stop opened']);
});

t.test('parts made before a failure elsewhere (no start) are undone by stop', async (t) => {
  const { log, lifecycle, part } = setup();
  part('opened', { start: false });
  part('never');
  await lifecycle.stop();
  t.same(log, ['stop opened'], 'a part not started is not stopped');
});

t.test('a failed stop is reported and the others are stopped anyway; adding or starting after start is refused', async (t) => {
  const { log, errors, lifecycle, part } = setup();
  part('a');
  part('b', { failStop: true });
  await lifecycle.start();
  t.throws(() => part('late'), /already started/);
  await t.rejects(lifecycle.start(), /already started/);
  await lifecycle.stop();
  t.same(log, ['start a', 'start b', 'stop b', 'stop a']);
  t.same(errors, ['b: b cannot stop']);
});
