import t, { type Test } from 'tap';
import { StatusError } from '../../../../src/api/errors.js';
import {
  MAX_ARGV_BYTES,
  MAX_ARGV_ELEMENTS,
  parseStreamOptions,
  type StreamQuery,
} from '../../../../src/streaming/remotecommand/options.js';

const streams = (q: StreamQuery, dialect: 'kubelet' | 'apiserver') => {
  const { stdin, stdout, stderr, tty } = parseStreamOptions({ command: 'ls', ...q }, dialect);
  return { stdin, stdout, stderr, tty };
};

function refuses(t: Test, fn: () => unknown, message: string | RegExp): void {
  try {
    fn();
    t.fail('expected a StatusError');
  } catch (err) {
    t.type(err, StatusError);
    const e = err as StatusError;
    t.equal(e.code, 400);
    t.equal(e.reason, 'BadRequest');
    if (typeof message === 'string') t.equal(e.message, message);
    else t.match(e.message, message);
  }
}

t.test('kubelet dialect: only the literal 1 counts for input/output/error', async (t) => {
  t.same(streams({ input: '1', output: '1', error: '1' }, 'kubelet'), { stdin: true, stdout: true, stderr: true, tty: false });
  t.same(streams({ output: '1', input: 'true', error: '0' }, 'kubelet'), { stdin: false, stdout: true, stderr: false, tty: false });
  t.same(streams({ output: '1', tty: '1' }, 'kubelet'), { stdin: false, stdout: true, stderr: false, tty: true });
  t.same(streams({ output: ['1', '0'] }, 'kubelet').stdout, true, 'first value of a repeated key (FormValue)');
  t.same(streams({ output: ['0', '1'], error: '1' }, 'kubelet').stdout, false);
});

t.test('kubelet dialect also accepts the apiserver spelling (documented leniency)', async (t) => {
  t.same(streams({ stdin: 'true', stdout: 'true', stderr: '1', tty: 'false' }, 'kubelet'), {
    stdin: true,
    stdout: true,
    stderr: true,
    tty: false,
  });
  t.same(streams({ stdout: 'TRUE', tty: 'true' }, 'kubelet'), { stdin: false, stdout: true, stderr: false, tty: true });
});

t.test('apiserver dialect: stdin/stdout/stderr/tty with true or 1; input/output/error ignored', async (t) => {
  t.same(streams({ stdin: 'true', stdout: '1', stderr: 'false', tty: 'true' }, 'apiserver'), {
    stdin: true,
    stdout: true,
    stderr: false,
    tty: true,
  });
  // client-node sends every flag, false ones as "false".
  t.same(streams({ stdout: 'true', stderr: 'false', stdin: 'false', tty: 'false' }, 'apiserver'), {
    stdin: false,
    stdout: true,
    stderr: false,
    tty: false,
  });
  refuses(t, () => parseStreamOptions({ input: '1', output: '1', command: 'ls' }, 'apiserver'), 'you must specify at least 1 of stdin, stdout, stderr');
  refuses(t, () => parseStreamOptions({ stdout: 'yes', command: 'ls' }, 'apiserver'), /at least 1 of/);
});

t.test('tty + stderr: stderr is dropped silently (kubelet NewOptions)', async (t) => {
  t.same(streams({ output: '1', error: '1', tty: '1' }, 'kubelet'), { stdin: false, stdout: true, stderr: false, tty: true });
  t.same(streams({ stdout: 'true', stderr: 'true', tty: 'true' }, 'apiserver'), { stdin: false, stdout: true, stderr: false, tty: true });
  // stderr alone with tty: still counts as "a stream was requested", then is dropped.
  t.same(streams({ stderr: 'true', tty: 'true' }, 'apiserver'), { stdin: false, stdout: false, stderr: false, tty: true });
});

t.test('no stream requested → 400', async (t) => {
  refuses(t, () => parseStreamOptions({ command: 'ls' }, 'kubelet'), 'you must specify at least 1 of stdin, stdout, stderr');
  refuses(t, () => parseStreamOptions({ tty: '1', command: 'ls' }, 'kubelet'), 'you must specify at least 1 of stdin, stdout, stderr');
  refuses(t, () => parseStreamOptions({ stdin: 'false', stdout: '0' }, 'apiserver', 'attach'), /at least 1 of/);
});

t.test('command: repeated values are argv elements; single string is one element', async (t) => {
  t.same(parseStreamOptions({ stdout: 'true', command: ['sh', '-c', 'echo a b; exit 3'] }, 'apiserver').command, [
    'sh',
    '-c',
    'echo a b; exit 3',
  ]);
  t.same(parseStreamOptions({ output: '1', command: 'ls' }, 'kubelet').command, ['ls']);
  t.same(parseStreamOptions({ output: '1', command: ['$(id)', ';rm -rf /', '`x`'] }, 'kubelet').command, ['$(id)', ';rm -rf /', '`x`'], 'passed literally');
});

t.test('container query value', async (t) => {
  t.equal(parseStreamOptions({ stdout: 'true', command: 'ls', container: 'c1' }, 'apiserver').container, 'c1');
  t.equal(parseStreamOptions({ stdout: 'true', command: 'ls', container: ['a', 'b'] }, 'apiserver').container, 'a');
  t.notOk('container' in parseStreamOptions({ stdout: 'true', command: 'ls' }, 'apiserver'));
  t.notOk('container' in parseStreamOptions({ stdout: 'true', command: 'ls', container: '' }, 'apiserver'));
});

t.test('exec without a command → 400; attach ignores command', async (t) => {
  refuses(t, () => parseStreamOptions({ stdout: 'true' }, 'apiserver'), 'you must specify a command');
  refuses(t, () => parseStreamOptions({ output: '1', command: [] }, 'kubelet'), 'you must specify a command');
  refuses(t, () => parseStreamOptions({ output: '1', command: '' }, 'kubelet', 'exec'), 'you must specify a command');
  t.same(parseStreamOptions({ stdout: 'true' }, 'apiserver', 'attach').command, []);
  t.same(parseStreamOptions({ stdout: 'true', command: 'ls' }, 'apiserver', 'attach').command, []);
});

t.test('argv limits', async (t) => {
  const many = Array.from({ length: MAX_ARGV_ELEMENTS }, (_, i) => `a${i}`);
  t.equal(parseStreamOptions({ stdout: 'true', command: many }, 'apiserver').command.length, MAX_ARGV_ELEMENTS, 'exactly the limit is fine');
  refuses(t, () => parseStreamOptions({ stdout: 'true', command: [...many, 'x'] }, 'apiserver'), /too many arguments: 1001/);

  const big = 'x'.repeat(MAX_ARGV_BYTES / 2);
  t.equal(parseStreamOptions({ stdout: 'true', command: [big, big] }, 'apiserver').command.length, 2, 'exactly 256 KiB is fine');
  refuses(t, () => parseStreamOptions({ stdout: 'true', command: [big, big, 'y'] }, 'apiserver'), /too long/);
  // Bytes, not UTF-16 units: 'é' is 2 bytes in UTF-8.
  refuses(t, () => parseStreamOptions({ stdout: 'true', command: ['é'.repeat(MAX_ARGV_BYTES / 2 + 1)] }, 'apiserver'), /too long/);

  refuses(t, () => parseStreamOptions({ stdout: 'true', command: ['sh', 'a\0b'] }, 'apiserver'), /NUL/);
});
