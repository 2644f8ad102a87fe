/**
 * Size limits on the messages nodelet publishes, and the one helper that applies them. A message
 * can carry text from a pod spec (a path, a name, an expanded value) or from the engine, so
 * every place a message leaves nodelet (an event, a status, a log line) cuts it first.
 */

/**
 * An event's message (events.k8s.io's `note`): the apiserver refuses a longer one on the
 * events.k8s.io API (k8s `pkg/apis/core/validation/events.go`, `NoteLengthLimit = 1024`), and
 * kube-scheduler cuts its own event and condition messages to it (`pkg/scheduler/schedule_one.go`,
 * `truncateMessage`). The core/v1 API does not check it; nodelet holds every event to it anyway.
 */
export const NOTE_LENGTH_LIMIT = 1024;

/**
 * A message in a pod's status (a container's waiting or terminated message, a condition's, the
 * pod's): the kubelet's `MaxContainerTerminationMessageLength` (k8s
 * `pkg/kubelet/container/runtime.go`, 4 KiB), the most it lets one container's own text put in
 * the status; nodelet's own messages need less. With the 12 KiB pod-wide share of termination
 * messages (`normalizeStatus`) a status stays far below the apiserver's 3 MiB request limit.
 */
export const STATUS_MESSAGE_LIMIT = 4 * 1024;

/**
 * A string in a log record (the message, a field, an error's message or stack): 4 KiB keeps a
 * stack trace of Node's 10 frames whole and bounds a record at a few KiB, whatever it carries.
 */
export const LOG_STRING_LIMIT = 4 * 1024;

/** What a cut message ends with, as kube-scheduler's `truncateMessage`. */
const SUFFIX = ' ...';

/**
 * `message` when it is at most `limit` UTF-8 bytes (the apiserver's `len`, not UTF-16 units),
 * else its longest prefix that ends on a whole character and leaves room for ` ...`, then ` ...`
 * (kube-scheduler's `truncateMessage`, which cuts at a byte and may split a character). Cheap
 * on any length: only the first `limit` characters are ever encoded.
 */
export function truncateMessage(message: string, limit: number = NOTE_LENGTH_LIMIT): string {
  // A UTF-16 unit is 1 to 3 UTF-8 bytes (a surrogate pair is 4 bytes for 2 units).
  if (message.length * 3 <= limit) return message;
  if (message.length <= limit && Buffer.byteLength(message) <= limit) return message;
  if (limit <= SUFFIX.length) return SUFFIX.slice(0, Math.max(0, limit));
  const head = Buffer.from(message.slice(0, limit), 'utf8');
  let cut = limit - SUFFIX.length;
  // Back up to the first byte of a character (continuation bytes are 0b10xxxxxx).
  while (cut > 0 && ((head[cut] ?? 0) & 0xc0) === 0x80) cut--;
  return head.subarray(0, cut).toString('utf8') + SUFFIX;
}
