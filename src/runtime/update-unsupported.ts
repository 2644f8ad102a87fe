/**
 * Thrown by a runtime's `updateContainerResources` when the engine has no container update at
 * all (an older Podman answers its Docker-compatible `POST /containers/{id}/update` with 404 for a
 * container that exists): in-place resizes are refused from then on (`Infeasible`) instead of
 * being retried against an engine that can never apply them.
 */
export class UpdateUnsupportedError extends Error {
  override name = 'UpdateUnsupportedError';
}
