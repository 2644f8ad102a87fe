import t from 'tap';
import { runExecSuite } from '../helpers/exec-suite.js';

// WebSocket v5: 1.29 behind its feature switch, 1.31 and 1.33 by default.
await runExecSuite(t, [
  { version: '1.29', transport: 'websocket', env: { KUBECTL_REMOTE_COMMAND_WEBSOCKETS: 'true' } },
  { version: '1.31', transport: 'websocket' },
  { version: '1.33', transport: 'websocket' },
]);
