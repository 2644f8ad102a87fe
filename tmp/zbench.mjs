import zlib from 'node:zlib';
import { Deflate } from 'minizlib';
const dict = Buffer.from('optionsgetheadpostputdeletetraceacceptaccept-charsetaccept-encodingaccept-languageauthorizationexpectfromhostif-modified-sinceif-matchif-none-matchif-rangeif-unmodifiedsince');
const block = Buffer.from('\x00\x00\x00\x02\x00\x00\x00\x0astreamtype\x00\x00\x00\x06stdout\x00\x00\x00\x07x-other\x00\x00\x00\x01y');
const N = 2000;
const a = zlib.createDeflate({ dictionary: dict, flush: zlib.constants.Z_SYNC_FLUSH });
a.on('data', () => {});
let t = process.hrtime.bigint();
for (let i = 0; i < N; i++) await new Promise((r) => a.write(block, r));
console.log('async zlib per block µs', Number(process.hrtime.bigint() - t) / N / 1000);
const b = new Deflate({ dictionary: dict, flush: zlib.constants.Z_SYNC_FLUSH });
b.on('data', () => {});
t = process.hrtime.bigint();
for (let i = 0; i < N; i++) { b.write(block); await Promise.resolve(); }
console.log('minizlib per block µs', Number(process.hrtime.bigint() - t) / N / 1000);
