import { Writable } from 'node:stream';
import t from 'tap';
import { createLogger } from '../../../src/logging/index.js';
import { CAPABILITIES, PrivilegedMode, boundedPrivileged, capabilityBounds, hostDevices, unknownCapability } from '../../../src/runtime/docker/privileged.js';

/**
 * `privileged` where the host's bounding set lacks a capability (src/runtime/docker/privileged.ts):
 * the bounding set read as the kernel numbers it, the substitute host config, and when it is used.
 */

t.test('capabilityBounds reads CapBnd against cap_last_cap', async (t) => {
  // This project's CI machine: every capability of a 5.10+ kernel but CAP_SYS_RESOURCE (24).
  const ci = capabilityBounds('000001fffeffffff', 40);
  t.same(ci.missing, ['SYS_RESOURCE']);
  t.equal(ci.granted.length, 40);
  t.notOk(ci.granted.includes('SYS_RESOURCE'));
  t.ok(ci.granted.includes('CHECKPOINT_RESTORE'), 'capability 40');
  // A full set on an older kernel (last cap 37): nothing missing, nothing past AUDIT_READ.
  const old = capabilityBounds('0000003fffffffff', 37);
  t.same(old.missing, []);
  t.equal(old.granted.at(-1), 'AUDIT_READ');
  // Docker's default set only: most are missing.
  const dflt = capabilityBounds('00000000a80425fb', 40);
  t.ok(dflt.missing.includes('SYS_ADMIN') && dflt.granted.includes('CHOWN'));
  t.equal(dflt.granted.length + dflt.missing.length, 41);
  t.equal(CAPABILITIES[21], 'SYS_ADMIN', 'numbers as include/uapi/linux/capability.h');
  t.equal(CAPABILITIES[24], 'SYS_RESOURCE');
});

t.test('boundedPrivileged: Privileged replaced by its parts, within what the host grants', async (t) => {
  const base = { Privileged: true, CapAdd: ['NET_ADMIN'], CapDrop: ['ALL'], SecurityOpt: ['no-new-privileges', 'seccomp=unconfined'], ReadonlyRootfs: true };
  const known = new Set(CAPABILITIES.slice(0, 38)); // Docker 20.10: up to AUDIT_READ
  const cfg = boundedPrivileged(base, capabilityBounds('000001fffeffffff', 40).granted, ['/dev/kmsg', '/dev/vda'], known);
  t.equal(cfg.Privileged, undefined, 'not Docker\'s Privileged, which asks for every capability');
  t.equal(cfg.CapDrop, undefined, 'drops give way, as in Docker\'s and containerd\'s privileged');
  t.equal(cfg.CapAdd?.length, 37, 'every granted capability the engine knows');
  t.notOk(cfg.CapAdd?.includes('SYS_RESOURCE'));
  t.notOk(cfg.CapAdd?.includes('BPF'), 'not one the engine does not know');
  t.same(cfg.SecurityOpt, ['no-new-privileges', 'seccomp=unconfined', 'apparmor=unconfined', 'label=disable']);
  t.same(cfg.MaskedPaths, []);
  t.same(cfg.ReadonlyPaths, []);
  t.same(cfg.DeviceCgroupRules, ['a *:* rwm']);
  t.same(cfg.Devices, [
    { PathOnHost: '/dev/kmsg', PathInContainer: '/dev/kmsg', CgroupPermissions: 'rwm' },
    { PathOnHost: '/dev/vda', PathInContainer: '/dev/vda', CgroupPermissions: 'rwm' },
  ]);
  t.equal(cfg.ReadonlyRootfs, true, 'the rest of the container\'s settings stay');
});

t.test('unknownCapability reads the engine\'s refusal', async (t) => {
  t.equal(unknownCapability(new Error('(HTTP code 500) server error - invalid CapAdd: unknown capability: "CAP_BPF"')), 'BPF');
  t.equal(unknownCapability(new Error('unknown capability: "PERFMON"')), 'PERFMON');
  t.equal(unknownCapability(new Error('No such image: busybox')), undefined);
});

t.test('hostDevices lists character and block devices, not pts, shm, fd or console', async (t) => {
  const devices = await hostDevices();
  t.ok(devices.includes('/dev/null'), '/dev/null');
  t.notOk(devices.some((d) => d.startsWith('/dev/pts/') || d.startsWith('/dev/shm') || d === '/dev/console' || d.startsWith('/dev/fd')));
  t.same(devices, [...devices].sort(), 'sorted');
  t.same(await hostDevices('/nonexistent'), [], 'an unreadable root is no devices');
});

t.test('PrivilegedMode substitutes only for Docker, only when a capability is missing', async (t) => {
  const lines: string[] = [];
  const log = createLogger({ verbosity: 2, format: 'json', destination: new Writable({ write: (c: Buffer, _e, done) => (lines.push(c.toString()), done()) }) });
  const privileged = { Privileged: true };
  const full = new PrivilegedMode(log, async () => capabilityBounds('000001ffffffffff', 40));
  t.same(await full.hostConfig(privileged, 'docker'), privileged, 'a full bounding set: Docker\'s Privileged as is');
  const bounded = new PrivilegedMode(log, async () => capabilityBounds('000001fffeffffff', 40));
  t.same(await bounded.hostConfig({ CapAdd: ['NET_ADMIN'] }, 'docker'), { CapAdd: ['NET_ADMIN'] }, 'not privileged: untouched');
  t.same(await bounded.hostConfig(privileged, 'podman'), privileged, 'Podman: passed through');
  const first = await bounded.hostConfig(privileged, 'docker');
  t.equal(first.Privileged, undefined);
  t.ok(first.CapAdd?.includes('BPF'), 'all granted at first');
  t.equal(bounded.refused(new Error('invalid CapAdd: unknown capability: "CAP_BPF"')), true, 'an unknown capability: retry');
  t.equal(bounded.refused(new Error('invalid CapAdd: unknown capability: "CAP_BPF"')), false, 'the same again: give up');
  t.equal(bounded.refused(new Error('something else')), false);
  const second = await bounded.hostConfig(privileged, 'docker');
  t.notOk(second.CapAdd?.includes('BPF'), 'remembered');
  await bounded.hostConfig(privileged, 'docker');
  t.equal(lines.filter((l) => l.includes('Privileged containers get the capabilities this host grants')).length, 1, 'logged once');
  t.match(lines.join(''), /"missing":\["SYS_RESOURCE"\]/);
});
