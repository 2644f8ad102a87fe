import t from 'tap';
import { FLAGS } from '../../../src/config/flags.js';
import { usage } from '../../../src/config/help.js';

const text = usage();
const lines = text.split('\n');

t.test('every flag in the table has help and a usage line', async (t) => {
  t.ok(FLAGS.length >= 15);
  for (const spec of FLAGS) {
    t.ok(spec.help.trim().length > 10, `--${spec.name} has help text`);
    const names = spec.short === undefined ? `      --${spec.name} ` : `  -${spec.short}, --${spec.name}`;
    const line = lines.find((l) => l.startsWith(names));
    if (line === undefined) {
      t.fail(`--${spec.name} missing from usage()`);
      continue;
    }
    t.ok(line.includes(spec.help), `--${spec.name} line shows its help`);
  }
});

t.test('defaults are shown the way pflag shows them', async (t) => {
  t.match(text, /--address string\s+.*\(default "127\.0\.0\.1"\)/);
  t.match(text, /--port int32\s+.*\(default 10250\)/);
  t.match(text, /--file-check-frequency duration\s+.*\(default 20s\)/);
  t.match(text, /--sync-frequency duration\s+.*\(default 1m0s\)/);
  t.match(text, /-v, --v Level\s+.*\(default 2\)/);
  t.match(text, /--logging-format string\s+.*\(default "text"\)/);
  t.match(text, /--pod-network string\s+.*\(default "none"\)/);
  t.match(text, /--docker-endpoint string\s+.*DOCKER_HOST.*\(default "unix:\/\/\/var\/run\/docker\.sock"\)/);
  t.match(text, /--pod-infra-container-image string\s+.*\(default "registry\.k8s\.io\/pause:3\.10"\)/);
  t.match(text, /--root-dir string\s+.*\(default "\/var\/lib\/nodelet"\)/);
  t.match(text, /--authentication-token-webhook-cache-ttl duration\s+.*\(default 2m0s\)/);
  t.match(text, /--authorization-webhook-cache-authorized-ttl duration\s+.*\(default 5m0s\)/);
  t.match(text, /--authorization-webhook-cache-unauthorized-ttl duration\s+.*\(default 30s\)/);
  t.match(text, /--kubeconfig string\s+.*Turns on cluster mode/);
  t.notMatch(text, /--pod-manifest-path string.*\(default/, 'empty default is not shown');
  t.notMatch(text, /--help.*\(default/, 'false bool default is not shown');
});

t.test('layout: usage header, sorted and aligned columns', async (t) => {
  t.match(text, /^nodelet .*\n\nUsage:\n {2}nodelet \[flags\]\n\nFlags:\n/);
  const flagLines = lines.filter((l) => /^ {2}(-\w, | {4})--/.test(l));
  t.equal(flagLines.length, FLAGS.length);
  const names = flagLines.map((l) => /--([\w-]+)/.exec(l)?.[1] ?? '');
  t.same(names, [...names].sort());
  const helpColumn = (l: string): number => /^.*?--[\w-]+(?: \w+)? +/.exec(l)?.[0].length ?? -1;
  t.equal(new Set(flagLines.map(helpColumn)).size, 1, 'help text starts in one column');
});

t.test('table integrity: unique names and shorthands, defaults valid for their kind', async (t) => {
  t.equal(new Set(FLAGS.map((f) => f.name)).size, FLAGS.length);
  const shorts = FLAGS.flatMap((f) => (f.short === undefined ? [] : [f.short]));
  t.equal(new Set(shorts).size, shorts.length);
  t.equal(new Set(FLAGS.map((f) => f.target)).size, FLAGS.length, 'one flag per target');
  for (const f of FLAGS) if (f.kind === 'enum') t.ok((f.values as readonly string[]).includes(f.default), `--${f.name} default is allowed`);
});
