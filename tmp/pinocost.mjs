import pino from 'pino';
const root = pino({ level: 'info' }, pino.destination('/dev/null'));
const keep = [];
gc(); gc();
const h0 = process.memoryUsage().heapUsed;
for (let i = 0; i < 10000; i++) { const req = root.child({ reqId: `req-${i}` }); keep.push(req.child({ pod: `default/pod-${i}`, container: 'app', stream: 'exec' })); }
gc(); gc();
console.log('bytes per request+session child', (process.memoryUsage().heapUsed - h0) / 10000);
