import t from 'tap';
import { preferredTableVersion } from '../../../src/server/negotiate.js';

t.test('kubectl get asks for a v1 Table', async (t) => {
  t.equal(
    preferredTableVersion('application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json'),
    'v1',
  );
  t.equal(preferredTableVersion('application/json;as=Table;v=v1;g=meta.k8s.io'), 'v1');
  t.equal(preferredTableVersion('application/json; as=Table; v=v1beta1; g=meta.k8s.io, application/json'), 'v1beta1');
});

t.test('plain JSON otherwise', async (t) => {
  t.equal(preferredTableVersion(undefined), undefined);
  t.equal(preferredTableVersion(''), undefined);
  t.equal(preferredTableVersion('application/json'), undefined);
  t.equal(preferredTableVersion('application/json, */*'), undefined);
  t.equal(preferredTableVersion('application/vnd.kubernetes.protobuf,application/json'), undefined);
  t.equal(preferredTableVersion('application/json,application/json;as=Table;v=v1;g=meta.k8s.io'), undefined, 'order matters');
  t.equal(preferredTableVersion('application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io,application/json'), undefined);
  t.equal(preferredTableVersion('application/json;as=Table;v=v2;g=meta.k8s.io'), undefined, 'unknown Table version');
});

t.test('q-values reorder preferences; protobuf Tables are skipped', async (t) => {
  t.equal(preferredTableVersion('application/json;q=0.5,application/json;as=Table;v=v1;g=meta.k8s.io'), 'v1');
  t.equal(preferredTableVersion('application/json;as=Table;v=v1;g=meta.k8s.io;q=0,application/json'), undefined);
  t.equal(preferredTableVersion('application/vnd.kubernetes.protobuf;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1;g=meta.k8s.io'), 'v1');
});
