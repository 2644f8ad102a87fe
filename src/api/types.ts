// Kubernetes object types come from the maintained `kubernetes-types` package; this module only
// re-exports what nodelet uses so imports stay short and in one place.
export type {
  Pod,
  PodList,
  PodSpec,
  PodStatus,
  PodCondition,
  Container,
  ContainerStatus,
  ContainerState,
  Event,
  EventList,
  Namespace,
  ObjectReference,
} from 'kubernetes-types/core/v1.js';
export type { ObjectMeta, Status, StatusCause, APIResourceList, APIResource, ListMeta } from 'kubernetes-types/meta/v1.js';
