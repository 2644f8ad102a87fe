import t from 'tap';
import { decodeResponse, encodeRequest, verdict } from '../../../src/kubelet/prober/grpc.js';

const message = (proto: number[]) => Buffer.from([0, 0, 0, 0, proto.length, ...proto]);

t.test('HealthCheckRequest: 5-byte prefix, service as protobuf field 1', async (t) => {
  t.same([...encodeRequest('')], [0, 0, 0, 0, 0], 'no service: an empty message');
  t.same([...encodeRequest('ab')], [0, 0, 0, 0, 4, 0x0a, 2, 0x61, 0x62]);
  const long = encodeRequest('x'.repeat(200));
  t.same([...long.subarray(0, 8)], [0, 0, 0, 0, 203, 0x0a, 0xc8, 0x01], 'a two-byte varint length');
});

t.test('HealthCheckResponse: status from field 1, unknown fields skipped, malformed refused', async (t) => {
  t.equal(decodeResponse(message([0x08, 0x01])), 1);
  t.equal(decodeResponse(message([])), 0, 'absent: UNKNOWN');
  t.equal(decodeResponse(message([0x12, 0x02, 0x61, 0x62, 0x08, 0x02])), 2, 'a string field before it');
  t.equal(decodeResponse(Buffer.from([0, 0, 0, 0, 9, 0x08])), undefined, 'truncated');
  t.equal(decodeResponse(Buffer.from([1, 0, 0, 0, 2, 0x08, 0x01])), undefined, 'compressed: not asked for');
  t.equal(decodeResponse(message([0x08, 0x80])), undefined, 'unterminated varint');
});

t.test("verdict: the kubelet's messages", async (t) => {
  t.same(verdict({ ':status': 200, 'grpc-status': '0' }, message([0x08, 0x01])), { result: 'success', output: 'service healthy' });
  t.same(verdict({ ':status': 200, 'grpc-status': '0' }, message([0x08, 0x02])), { result: 'failure', output: 'service unhealthy (responded with "NOT_SERVING")' });
  t.same(verdict({ ':status': 200, 'grpc-status': '12', 'grpc-message': 'unknown%20service' }, Buffer.alloc(0)), {
    result: 'failure',
    output: 'error: this server does not implement the grpc health protocol (grpc.health.v1.Health): unknown service',
  });
  t.same(verdict({ ':status': 200, 'grpc-status': '5', 'grpc-message': 'unknown service foo' }, Buffer.alloc(0)), {
    result: 'failure',
    output: 'error: health rpc probe failed: rpc error: code = NotFound desc = unknown service foo',
  });
  t.equal(verdict({ ':status': 200 }, Buffer.alloc(0)).result, 'failure', 'no trailers');
  t.equal(verdict({ ':status': 404 }, Buffer.alloc(0)).result, 'failure', 'not a gRPC server');
  t.equal(verdict({ ':status': 200, 'grpc-status': '0' }, Buffer.from([9])).result, 'failure', 'a malformed answer');
});
