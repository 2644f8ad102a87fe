import t from 'tap';
import { runExecSuite } from '../helpers/exec-suite.js';

// kubectl up to 1.28 speaks only SPDY; 1.29 offers v5 over SPDY (nodelet answers v4).
await runExecSuite(t, [
  { version: '1.27', transport: 'spdy' },
  { version: '1.28', transport: 'spdy' },
  { version: '1.29', transport: 'spdy' },
]);
