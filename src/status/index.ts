// The status manager's surface: the versioned cache, and the pure pieces status generation shares.
export { StatusManager, type StatusConsumer, type StatusLogger, type StatusUpdate } from './manager.js';
export { isStatusEqual, normalizeStatus } from './normalize.js';
export { KUBELET_POD_CONDITIONS } from './conditions.js';
export { isTerminalPhase } from './transitions.js';
export { rfc3339 } from '../api/time.js';
