import t from 'tap';
import type { Pod } from '../../../src/api/types.js';
import { PodManager } from '../../../src/pod/manager.js';

const pod = (name: string, uid: string, ns = 'default', annotations?: Record<string, string>): Pod => ({
  metadata: { name, namespace: ns, uid, ...(annotations ? { annotations } : {}) },
  spec: { containers: [{ name: 'c', image: 'i' }] },
});
const staticPod = pod('etcd-n1', 'static-uid', 'kube-system', { 'kubernetes.io/config.source': 'file' });
const mirrorPod = pod('etcd-n1', 'mirror-uid', 'kube-system', { 'kubernetes.io/config.mirror': 'static-uid' });

t.test('setPods indexes regular and mirror pods apart', async (t) => {
  const m = new PodManager();
  const web = pod('web', 'u1');
  m.setPods([web, staticPod, mirrorPod]);
  t.same(m.getPods().map((p) => p.metadata?.uid).sort(), ['static-uid', 'u1']);
  t.same(m.getMirrorPods(), [mirrorPod]);
  t.equal(m.getPodByUID('u1'), web);
  t.equal(m.getPodByUID('mirror-uid'), undefined, 'mirror pods are not regular pods');
  t.equal(m.getPodByFullName('web_default'), web);
  t.equal(m.getPodByName('default', 'web'), web);
  t.equal(m.getPodByName('other', 'web'), undefined);
  t.equal(m.getMirrorPodByPod(staticPod), mirrorPod);
  t.equal(m.getPodByMirrorPod(mirrorPod), staticPod);
  t.equal(m.getMirrorPodByPod(web), undefined);

  m.setPods([web]);
  t.equal(m.getMirrorPods().length, 0, 'setPods replaces everything');
  t.equal(m.getPodByUID('static-uid'), undefined);
});

t.test('translatePodUID', async (t) => {
  const m = new PodManager();
  m.setPods([staticPod, mirrorPod]);
  t.equal(m.translatePodUID('mirror-uid'), 'static-uid', 'mirror UID → static pod UID');
  t.equal(m.translatePodUID('static-uid'), 'static-uid');
  t.equal(m.translatePodUID('unknown'), 'unknown');
  t.equal(m.translatePodUID(''), '');
  m.deletePod(staticPod);
  t.equal(m.translatePodUID('mirror-uid'), 'mirror-uid', 'no static pod → unchanged');
});

t.test('add, update (incl. rename), delete', async (t) => {
  const m = new PodManager();
  const a = pod('a', 'u1');
  m.addPod(a);
  t.equal(m.getPodByUID('u1'), a);
  const renamed = pod('b', 'u1');
  m.updatePod(renamed);
  t.equal(m.getPodByUID('u1'), renamed);
  t.equal(m.getPodByName('default', 'a'), undefined, 'old full name is gone');
  t.equal(m.getPodByName('default', 'b'), renamed);
  t.equal(m.getPods().length, 1);

  // Another UID took the full name; deleting the old UID must not remove the newcomer's entry.
  const newcomer = pod('b', 'u2');
  m.addPod(newcomer);
  m.deletePod(renamed);
  t.equal(m.getPodByUID('u1'), undefined);
  t.equal(m.getPodByName('default', 'b'), newcomer);

  m.addPod(mirrorPod);
  m.deletePod(mirrorPod);
  t.same(m.getMirrorPods(), []);
  t.equal(m.getPodByUID('u2'), newcomer, 'deleting a mirror pod leaves regular pods alone');
});
