import t from 'tap';
import { runExecSuite } from '../helpers/exec-suite.js';

// New kubectl forced onto SPDY (the path the apiserver and older proxies take).
await runExecSuite(t, [
  { version: '1.31', transport: 'spdy', env: { KUBECTL_REMOTE_COMMAND_WEBSOCKETS: 'false' } },
  { version: '1.33', transport: 'spdy', env: { KUBECTL_REMOTE_COMMAND_WEBSOCKETS: 'false' } },
]);
