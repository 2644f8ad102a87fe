/** A resource quantity as `resource.ParseQuantity` accepts it, without a sign (`10Mi`, `500k`, `1e6`). */
const QUANTITY = /^(\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+|Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE])?$/;

/**
 * Checks `containerLogMaxSize`: a quantity (the kubelet's KubeletConfiguration field is one); its
 * size in bytes, and the 1 KiB floor, are the runtime's (`containerLogMaxSizeBytes`,
 * src/runtime/docker/log-config.ts). Throws with the reason.
 */
export function checkContainerLogMaxSize(text: string): void {
  if (!QUANTITY.test(text)) throw new Error('not a quantity (e.g. 10Mi)');
}
