import t from 'tap';
import type Docker from 'dockerode';
import { EngineProbe, containerUlimits, engineOf, parseProcLimits, readHostLimits, type HostLimits } from '../../../src/runtime/docker/engine.js';
import { parseContainerUlimits } from '../../../src/config/ulimits.js';

/** `GET /version` of Debian 12's podman 4.3.1 (`podman system service`), trimmed. */
const PODMAN_VERSION = {
  Platform: { Name: 'linux/amd64/debian-12' },
  Components: [
    { Name: 'Podman Engine', Version: '4.3.1', Details: { APIVersion: '4.3.1', MinAPIVersion: '4.0.0' } },
    { Name: 'Conmon', Version: 'conmon version 2.1.6, commit: unknown' },
    { Name: 'OCI Runtime (runc)', Version: 'runc version 1.1.5+ds1' },
  ],
  Version: '4.3.1',
  ApiVersion: '1.41',
  MinAPIVersion: '1.24',
} as unknown as Docker.DockerVersion;

/** `GET /version` of Debian 12's docker.io, trimmed. */
const DOCKER_VERSION = {
  Platform: { Name: '' },
  Components: [
    { Name: 'Engine', Version: '20.10.24+dfsg1' },
    { Name: 'containerd', Version: '1.6.20~ds1' },
    { Name: 'runc', Version: '1.1.5+ds1' },
    { Name: 'docker-init', Version: '0.19.0' },
  ],
  Version: '20.10.24+dfsg1',
  ApiVersion: '1.41',
} as unknown as Docker.DockerVersion;

const PROC_LIMITS = `Limit                     Soft Limit           Hard Limit           Units     
Max cpu time              unlimited            unlimited            seconds   
Max stack size            8388608              unlimited            bytes     
Max processes             96364                96364                processes 
Max open files            1024                 20000                files     
Max locked memory         8388608              8388608              bytes     
Max realtime timeout      unlimited            unlimited            us        
`;

t.test('the engine comes from /version: Podman by its components, else Docker', async (t) => {
  const podman = engineOf(PODMAN_VERSION);
  t.match(podman, { name: 'podman', version: '4.3.1', apiVersion: '1.41', runtimeVersion: 'podman://4.3.1' });
  const docker = engineOf(DOCKER_VERSION);
  t.match(docker, { name: 'docker', version: '20.10.24+dfsg1', runtimeVersion: 'docker://20.10.24+dfsg1' });
  t.equal(engineOf({ Version: '28.2.2' } as Docker.DockerVersion).runtimeVersion, 'docker://28.2.2');
  // A Podman that lists no components still names itself in the platform.
  t.equal(engineOf({ Version: '5.0.0', Platform: { Name: 'Podman Engine' } } as unknown as Docker.DockerVersion).name, 'podman');
});

t.test("Docker's sandboxes skip libnetwork's prestart hook under a network plugin; Podman has none to skip", async (t) => {
  t.equal(engineOf(DOCKER_VERSION).quirks.netnsByHook, true);
  t.equal(engineOf(PODMAN_VERSION).quirks.netnsByHook, false);
});

t.test('/proc/self/limits rows by Docker ulimit name, unlimited as -1', async (t) => {
  const limits = parseProcLimits(PROC_LIMITS);
  t.same(limits.nofile, { soft: 1024, hard: 20000 });
  t.same(limits.nproc, { soft: 96364, hard: 96364 });
  t.same(limits.stack, { soft: 8388608, hard: -1 });
  t.same(limits.rttime, { soft: -1, hard: -1 });
  t.same(parseProcLimits('garbage\n'), {});
  const host = await readHostLimits();
  t.ok(host.own.nofile, 'this process has a nofile limit');
});

const host: HostLimits = { own: parseProcLimits(PROC_LIMITS), pidMax: 32768 };

t.test('auto: nothing on Docker; nofile and nproc within the own hard limits (and pid_max) on Podman', async (t) => {
  t.same(containerUlimits('auto', engineOf(DOCKER_VERSION), host), { aboveOwnLimits: [] });
  t.same(containerUlimits('auto', engineOf(PODMAN_VERSION), host), {
    ulimits: [
      { Name: 'nofile', Soft: 20000, Hard: 20000 },
      { Name: 'nproc', Soft: 32768, Hard: 32768 },
    ],
    aboveOwnLimits: [],
  });
  // Unlimited (or unknown) own limits: Podman's own ceiling.
  t.same(containerUlimits('auto', engineOf(PODMAN_VERSION), { own: { nofile: { soft: -1, hard: -1 } } }).ulimits, [
    { Name: 'nofile', Soft: 1048576, Hard: 1048576 },
    { Name: 'nproc', Soft: 1048576, Hard: 1048576 },
  ]);
});

t.test('none: the engine defaults everywhere', async (t) => {
  t.same(containerUlimits('none', engineOf(PODMAN_VERSION), host), { aboveOwnLimits: [] });
  t.same(containerUlimits('none', engineOf(DOCKER_VERSION), host), { aboveOwnLimits: [] });
});

t.test('explicit: as given on both engines; Podman gets nofile/nproc filled in; above own limits reported', async (t) => {
  t.same(containerUlimits('nofile=1024:4096,core=0', engineOf(DOCKER_VERSION), host), {
    ulimits: [
      { Name: 'nofile', Soft: 1024, Hard: 4096 },
      { Name: 'core', Soft: 0, Hard: 0 },
    ],
    aboveOwnLimits: [],
  });
  t.same(containerUlimits('nofile=1024:4096', engineOf(PODMAN_VERSION), host).ulimits, [
    { Name: 'nofile', Soft: 1024, Hard: 4096 },
    { Name: 'nproc', Soft: 32768, Hard: 32768 },
  ]);
  t.same(containerUlimits('nofile=1048576,nproc=unlimited', engineOf(DOCKER_VERSION), host).aboveOwnLimits, ['nofile', 'nproc']);
});

t.test('the flag syntax', async (t) => {
  t.same(parseContainerUlimits(' auto '), { mode: 'auto' });
  t.same(parseContainerUlimits('none'), { mode: 'none' });
  t.same(parseContainerUlimits('nofile=10, nproc=5:unlimited'), {
    mode: 'explicit',
    limits: [
      { name: 'nofile', soft: 10, hard: 10 },
      { name: 'nproc', soft: 5, hard: -1 },
    ],
  });
  t.throws(() => parseContainerUlimits('nofile=unlimited:5'), /soft limit unlimited is above hard limit 5/);
  t.throws(() => parseContainerUlimits('nofile'), /expected name=soft\[:hard\]/);
  t.throws(() => parseContainerUlimits('nofile=99999999999999999'), /too large/);
  t.throws(() => parseContainerUlimits(''), /expected "auto"/);
});

t.test('the probe asks once it answers, and again after a failure', async (t) => {
  let calls = 0;
  let fail = true;
  const docker = {
    version: async () => {
      calls++;
      if (fail) throw new Error('connect ENOENT');
      return PODMAN_VERSION;
    },
  } as unknown as Docker;
  const probe = new EngineProbe(docker);
  t.equal(probe.current, undefined);
  await t.rejects(probe.get(), /ENOENT/);
  fail = false;
  const [a, b] = await Promise.all([probe.get(), probe.get()]);
  t.equal(a, b);
  t.equal(probe.current?.name, 'podman');
  await probe.get();
  t.equal(calls, 2, 'one failed call, one shared successful call');
});
