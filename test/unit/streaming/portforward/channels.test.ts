import t from 'tap';
import { dataChannel, errorChannel, portPrefix } from '../../../../src/streaming/portforward/channels.js';

t.test('channel layout and the port prefix', async (t) => {
  t.same([0, 1, 2].map(dataChannel), [0, 2, 4]);
  t.same([0, 1, 2].map(errorChannel), [1, 3, 5]);
  t.same([...portPrefix(8080)], [0x90, 0x1f], 'uint16 little-endian');
  t.same([...portPrefix(1)], [1, 0]);
  t.same([...portPrefix(65535)], [0xff, 0xff]);
});
