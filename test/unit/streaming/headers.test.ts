import t from 'tap';
import { commaSeparatedHeaderValues } from '../../../src/streaming/headers.js';

const KUBECTL_129 = ['v5.channel.k8s.io', 'v4.channel.k8s.io', 'v3.channel.k8s.io', 'v2.channel.k8s.io', 'channel.k8s.io'];

t.test('repeated lines and comma-joined values agree', async (t) => {
  t.same(commaSeparatedHeaderValues(KUBECTL_129), KUBECTL_129, 'headersDistinct: one element per line');
  t.same(commaSeparatedHeaderValues(KUBECTL_129.join(', ')), KUBECTL_129, "req.headers joins lines with ', '");
  t.same(commaSeparatedHeaderValues(['v4.channel.k8s.io,v3.channel.k8s.io', ' channel.k8s.io ']), ['v4.channel.k8s.io', 'v3.channel.k8s.io', 'channel.k8s.io']);
  t.same(commaSeparatedHeaderValues(['a', 'b,c']), ['a', 'b', 'c']);
});

t.test('pieces are trimmed of spaces and tabs only; empties are dropped', async (t) => {
  t.same(commaSeparatedHeaderValues('a, b ,,c'), ['a', 'b', 'c']);
  t.same(commaSeparatedHeaderValues('a,\tb\t, c'), ['a', 'b', 'c'], 'HTTP optional white space');
  t.same(commaSeparatedHeaderValues('a b, c\u00a0'), ['a b', 'c\u00a0'], 'inner spaces and other white space are kept');
  t.same(commaSeparatedHeaderValues([' , ,', '']), []);
  t.same(commaSeparatedHeaderValues(''), []);
  t.same(commaSeparatedHeaderValues(undefined), []);
});

t.test('case and order are kept (Go compares protocol names exactly)', async (t) => {
  t.same(commaSeparatedHeaderValues('V4.CHANNEL.K8S.IO, v3.channel.k8s.io'), ['V4.CHANNEL.K8S.IO', 'v3.channel.k8s.io']);
});
