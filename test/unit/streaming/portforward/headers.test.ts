import t from 'tap';
import { validateStreamHeaders } from '../../../../src/streaming/portforward/headers.js';

t.test('stream headers are checked like the kubelet: port first, then the stream type', async (t) => {
  t.same(validateStreamHeaders({ streamtype: 'error', port: '80', requestid: '7' }, 1), { stream: { type: 'error', port: 80, requestId: '7' } });
  t.same(validateStreamHeaders({ streamtype: 'data', port: '80', requestid: '7' }, 3), { stream: { type: 'data', port: 80, requestId: '7' } });
  t.same(validateStreamHeaders({ streamtype: 'data' }, 1), { error: '"port" header is required' });
  t.same(validateStreamHeaders({ port: 'x', streamtype: 'bogus' }, 1), { error: 'unable to parse "x" as a port: strconv.ParseUint: parsing "x": invalid syntax' });
  t.same(validateStreamHeaders({ port: '0', streamtype: 'data' }, 1), { error: 'port "0" must be > 0' });
  t.match(validateStreamHeaders({ port: '65536', streamtype: 'data' }, 1), { error: /out of range/ });
  t.same(validateStreamHeaders({ port: '80' }, 1), { error: '"streamType" header is required' });
  t.same(validateStreamHeaders({ port: '80', streamtype: 'stdin' }, 1), { error: 'invalid stream type "stdin"' });
  t.same(validateStreamHeaders({ port: '80', streamtype: 'Data' }, 1), { error: 'invalid stream type "Data"' }, 'values are case-sensitive');
});

t.test('without requestID (clients before 1.6) the stream ids pair error n with data n+2', async (t) => {
  t.same(validateStreamHeaders({ streamtype: 'error', port: '80' }, 5), { stream: { type: 'error', port: 80, requestId: '5' } });
  t.same(validateStreamHeaders({ streamtype: 'data', port: '80' }, 7), { stream: { type: 'data', port: 80, requestId: '5' } });
  t.same(validateStreamHeaders({ streamtype: 'data', port: '80', requestid: '' }, 7), { stream: { type: 'data', port: 80, requestId: '5' } });
});
