import t from 'tap';
import { ConfigError, parseFlags } from '../../../src/config/parse.js';

t.test('every value syntax pflag accepts', async (t) => {
  t.same(parseFlags(['--port=8080']), { port: 8080 });
  t.same(parseFlags(['--port', '8080']), { port: 8080 });
  t.same(parseFlags(['-v=4']), { verbosity: 4 });
  t.same(parseFlags(['-v', '4']), { verbosity: 4 });
  t.same(parseFlags(['-v4']), { verbosity: 4 });
  t.same(parseFlags(['--v=4']), { verbosity: 4 });
  t.same(parseFlags(['--v', '4']), { verbosity: 4 });
  t.same(parseFlags(['--help']), { help: true });
  t.same(parseFlags(['-h']), { help: true });
  t.same(parseFlags(['--help=true']), { help: true });
  t.same(parseFlags(['--help=false']), { help: false });
  t.same(parseFlags(['--help=F']), { help: false });
  t.same(parseFlags(['-hv', '3']), { help: true, verbosity: 3 }, 'bool shorthand groups with a valued one');
  t.same(parseFlags(['--pod_manifest_path=/m']), { staticPodPath: '/m' }, 'underscores normalised');
  t.same(parseFlags(['--hostname-override=']), { nodeName: '' }, 'empty string value');
  t.same(parseFlags(['--port=1', '--port=2']), { port: 2 }, 'last one wins');
  t.same(parseFlags([]), {});
});

t.test('each flag sets its Config field', async (t) => {
  t.same(
    parseFlags([
      '--address=::1', '--port=10251', '--pod-manifest-path', '/etc/m', '--file-check-frequency=5s',
      '--sync-frequency', '1m30s', '--hostname-override=n1', '--node-ip=10.0.0.5',
      '--docker-endpoint=tcp://127.0.0.1:2375', '--pod-infra-container-image=pause:x', '--root-dir=/tmp/r',
      '--config=/c.yaml', '--v=5', '--logging-format=json', '--pod-network=bridge',
    ]),
    {
      address: '::1', port: 10251, staticPodPath: '/etc/m', fileCheckFrequencyMs: 5000, syncFrequencyMs: 90_000,
      nodeName: 'n1', nodeIP: '10.0.0.5', dockerEndpoint: 'tcp://127.0.0.1:2375', podInfraContainerImage: 'pause:x',
      rootDir: '/tmp/r', configFile: '/c.yaml', verbosity: 5, loggingFormat: 'json', podNetwork: 'bridge',
    },
  );
});

t.test('ports use Go base-0 integers like Int32Var', async (t) => {
  t.same(parseFlags(['--port=0x2800']), { port: 10240 });
  t.same(parseFlags(['--port=010']), { port: 8 });
  t.same(parseFlags(['--port=10_250']), { port: 10250 });
  t.same(parseFlags(['--port=+80']), { port: 80 });
});

t.test('pflag takes the next word as a value even if it looks like a flag', async (t) => {
  t.same(parseFlags(['--hostname-override', '--port']), { nodeName: '--port' });
});

t.test('errors are one-line ConfigErrors with exit code 2', async (t) => {
  const table: [string[], string][] = [
    [['--foo'], 'unknown flag: --foo'],
    [['--foo=1'], 'unknown flag: --foo'],
    [['-x'], "unknown shorthand flag: 'x' in -x"],
    [['-hx'], "unknown shorthand flag: 'x' in -hx"],
    [['-port=1'], "unknown shorthand flag: 'p' in -port=1"],
    [['---port=1'], 'bad flag syntax: ---port=1'],
    [['--port'], 'flag needs an argument: --port'],
    [['-v'], "flag needs an argument: 'v' in -v"],
    [['--port=abc'], 'invalid argument "abc" for "--port" flag: strconv.ParseInt: parsing "abc": invalid syntax'],
    [['--port', ''], 'invalid argument "" for "--port" flag: strconv.ParseInt: parsing "": invalid syntax'],
    [['--port=08'], 'invalid argument "08" for "--port" flag: strconv.ParseInt: parsing "08": invalid syntax'],
    [['--port=0'], 'invalid argument "0" for "--port" flag: must be between 1 and 65535, inclusive'],
    [['--port=65536'], 'invalid argument "65536" for "--port" flag: must be between 1 and 65535, inclusive'],
    [['--port=99999999999'], 'invalid argument "99999999999" for "--port" flag: strconv.ParseInt: parsing "99999999999": value out of range'],
    [['--v=x'], 'invalid argument "x" for "-v, --v" flag: strconv.ParseInt: parsing "x": invalid syntax'],
    [['-v=0x4'], 'invalid argument "0x4" for "-v, --v" flag: strconv.ParseInt: parsing "0x4": invalid syntax'],
    [['-v=-1'], 'invalid argument "-1" for "-v, --v" flag: must not be negative'],
    [['--sync-frequency=10'], 'invalid argument "10" for "--sync-frequency" flag: time: missing unit in duration "10"'],
    [['--sync-frequency=-1s'], 'invalid argument "-1s" for "--sync-frequency" flag: must not be negative'],
    [['--file-check-frequency=0'], 'invalid argument "0" for "--file-check-frequency" flag: must be greater than zero'],
    [['--logging-format=xml'], 'invalid argument "xml" for "--logging-format" flag: supported values: "text", "json"'],
    [['--help=maybe'], 'invalid argument "maybe" for "-h, --help" flag: strconv.ParseBool: parsing "maybe": invalid syntax'],
    [['--root-dir='], 'invalid argument "" for "--root-dir" flag: must not be empty'],
    [['run'], 'unknown command "run"'],
    [['--port=1', 'extra'], 'unknown command "extra"'],
    [['--', '--port=1'], 'unknown command "--port=1"'],
    [['-'], 'unknown command "-"'],
  ];
  for (const [argv, message] of table) {
    const err = t.throws(() => parseFlags(argv), { message }, argv.join(' '));
    t.ok(err instanceof ConfigError, `${argv.join(' ')}: ConfigError`);
    if (err instanceof ConfigError) {
      t.equal(err.exitCode, 2);
      t.notMatch(err.message, /\n/);
    }
  }
});

t.test('flag errors are reported before stray arguments, as pflag parses fully first', async (t) => {
  t.throws(() => parseFlags(['extra', '--nope']), { message: 'unknown flag: --nope' });
});
