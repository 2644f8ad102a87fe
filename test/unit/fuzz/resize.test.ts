import t from 'tap';
import { MAX_RESIZE_OBJECT_BYTES, ResizeDecoder } from '../../../src/streaming/remotecommand/resize.js';
import type { TerminalSize } from '../../../src/streaming/types.js';
import { fuzzSeed, prng } from '../../helpers/prng.js';

/**
 * Seeded fuzz of the resize decoder (B14's parser): valid size lines interleaved with garbage
 * lines, split into random chunks. Set FUZZ_SEED to replay a failure.
 */

const SEED = fuzzSeed();

t.test('resize decoder: garbage never throws, valid lines always come through, sizes stay in 1..65535', async (t) => {
  t.comment(`seed ${SEED} (replay with FUZZ_SEED=${SEED})`);
  const rand = prng(SEED);
  const int = (n: number) => Math.floor(rand() * n);
  const tokens = ['{', '"', '\\', ':', ',', '[', ']', 'Width', 'Height', '"Width":', '"Height":', '-1', '0', '1e12', '65536', 'null', 'true', ' ', '\u00ff', '{"a":{"b":', '"\\"'];
  const deadline = Date.now() + 3000;
  let iterations = 0;
  for (; iterations < 3000 && Date.now() < deadline; iterations++) {
    const d = new ResizeDecoder();
    const expected: TerminalSize[] = [];
    const lines: string[] = [];
    for (let l = int(12); l >= 0; l--) {
      if (rand() < 0.4) {
        const size = { width: 1 + int(65535), height: 1 + int(65535) };
        expected.push(size);
        const spaced = rand() < 0.5 ? ' ' : '';
        lines.push(rand() < 0.5 ? `{"Width":${size.width},${spaced}"Height":${size.height}}` : `{"height":${size.height},"WIDTH":${size.width}}`);
      } else {
        // Garbage without '}' or a newline cannot complete an object, so it may never yield a size.
        let g = '';
        for (let k = int(20); k > 0; k--) g += rand() < 0.7 ? tokens[int(tokens.length)] : String.fromCharCode(int(256));
        if (rand() < 0.05) g += '{' + 'x'.repeat(MAX_RESIZE_OBJECT_BYTES + int(5000));
        lines.push(g.replace(/[}\n]/g, ''));
      }
    }
    const bytes = Buffer.from(lines.join('\n') + '\n', 'latin1');
    const got: TerminalSize[] = [];
    for (let off = 0; off < bytes.length; ) {
      const n = 1 + int(64);
      got.push(...d.push(bytes.subarray(off, off + n)));
      off += n;
    }
    const bad = got.find((s) => !Number.isInteger(s.width) || !Number.isInteger(s.height) || s.width < 1 || s.height < 1 || s.width > 65535 || s.height > 65535);
    if (bad) t.fail(`seed ${SEED} iteration ${iterations}: out-of-range size ${JSON.stringify(bad)}`);
    if (JSON.stringify(got) !== JSON.stringify(expected)) {
      t.same(got, expected, `seed ${SEED} iteration ${iterations}: ${JSON.stringify(bytes.toString('latin1').slice(0, 300))}`);
      break;
    }
    const buffered = (d as unknown as { buf: number[] }).buf.length;
    if (buffered > MAX_RESIZE_OBJECT_BYTES) t.fail(`buffered ${buffered} bytes`);
  }
  t.ok(iterations >= 100, `${iterations} iterations`);
});

t.test('resize decoder: pure random bytes never throw and never yield out-of-range sizes', async (t) => {
  const rand = prng(SEED + 1);
  const d = new ResizeDecoder();
  let sizes = 0;
  for (let i = 0; i < 2000; i++) {
    const chunk = Buffer.from(Array.from({ length: Math.floor(rand() * 256) }, () => (rand() < 0.3 ? '{}":,0123456789\n'.charCodeAt(Math.floor(rand() * 16)) : Math.floor(rand() * 256))));
    for (const s of d.push(chunk)) {
      sizes++;
      if (!(s.width >= 1 && s.width <= 65535 && s.height >= 1 && s.height <= 65535)) t.fail(`seed ${SEED}: ${JSON.stringify(s)}`);
    }
  }
  t.pass(`${sizes} sizes decoded from noise, all in range`);
});
