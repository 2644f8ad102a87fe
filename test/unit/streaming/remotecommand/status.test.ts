import t from 'tap';
import { remoteCommandStatus, statusPayload } from '../../../../src/streaming/remotecommand/status.js';

const SH = ['sh', '-c', 'exit 3'];

// Bytes as the kubelet writes them (observed with kubectl 1.27–1.33).
const SUCCESS = '{"metadata":{},"status":"Success"}';
const exitPayload = (argv: string, n: number) =>
  `{"metadata":{},"status":"Failure","message":"command terminated with non-zero exit code: error executing command [${argv}], exit code ${n}","reason":"NonZeroExitCode","details":{"causes":[{"reason":"ExitCode","message":"${n}"}]}}`;

t.test('v4/v5 JSON Status bytes', async (t) => {
  for (const v of ['v4', 'v5'] as const) {
    t.equal(statusPayload(v, 'exec', SH, { kind: 'exited', exitCode: 0 }), SUCCESS);
    t.equal(statusPayload(v, 'exec', SH, { kind: 'exited', exitCode: 3 }), exitPayload('sh -c exit 3', 3));
    t.equal(statusPayload(v, 'exec', ['sh', '-c', 'exit 42'], { kind: 'exited', exitCode: 42 }), exitPayload('sh -c exit 42', 42));
    t.equal(statusPayload(v, 'exec', ['false'], { kind: 'exited', exitCode: 255 }), exitPayload('false', 255));
  }
  t.equal(
    statusPayload('v4', 'exec', SH, { kind: 'exited', exitCode: 3 }),
    '{"metadata":{},"status":"Failure","message":"command terminated with non-zero exit code: error executing command [sh -c exit 3], exit code 3","reason":"NonZeroExitCode","details":{"causes":[{"reason":"ExitCode","message":"3"}]}}',
    'verbatim as the kubelet writes it',
  );
});

t.test('internal errors', async (t) => {
  t.equal(
    statusPayload('v5', 'exec', SH, { kind: 'error', error: new Error('container not running') }),
    '{"metadata":{},"status":"Failure","message":"Internal error occurred: error executing command in container: container not running","reason":"InternalError","details":{"causes":[{"message":"error executing command in container: container not running"}]},"code":500}',
  );
  t.equal(
    statusPayload('v4', 'attach', [], { kind: 'error', error: 'socket hang up' }),
    '{"metadata":{},"status":"Failure","message":"Internal error occurred: error attaching to container: socket hang up","reason":"InternalError","details":{"causes":[{"message":"error attaching to container: socket hang up"}]},"code":500}',
  );
});

t.test('exit codes outside 0–255 never become ExitCode causes', async (t) => {
  for (const code of [256, 300, -1, 1.5, Number.NaN]) {
    const s = remoteCommandStatus('exec', SH, { kind: 'exited', exitCode: code });
    t.equal(s.reason, 'InternalError', `exit ${code}`);
    t.equal(s.code, 500);
    t.notMatch(JSON.stringify(s), /ExitCode/);
    t.match(s.message, `exit code outside 0-255: ${code}`);
  }
});

t.test('attach: success whether the container exited or the stream just ended', async (t) => {
  t.equal(statusPayload('v5', 'attach', [], { kind: 'detached' }), SUCCESS);
  t.equal(statusPayload('v5', 'attach', [], { kind: 'exited', exitCode: 9 }), SUCCESS, 'ServeAttach reports no exit codes');
  t.equal(statusPayload('v5', 'exec', SH, { kind: 'detached' }), SUCCESS);
});

t.test('v1–v3: nothing on success, plain text on failure', async (t) => {
  for (const v of ['v1', 'v2', 'v3'] as const) {
    t.equal(statusPayload(v, 'exec', SH, { kind: 'exited', exitCode: 0 }), undefined);
    t.equal(statusPayload(v, 'attach', [], { kind: 'detached' }), undefined);
    t.equal(
      statusPayload(v, 'exec', SH, { kind: 'exited', exitCode: 3 }),
      'command terminated with non-zero exit code: error executing command [sh -c exit 3], exit code 3',
    );
    t.equal(
      statusPayload(v, 'exec', SH, { kind: 'error', error: new Error('boom') }),
      'Internal error occurred: error executing command in container: boom',
    );
  }
});
