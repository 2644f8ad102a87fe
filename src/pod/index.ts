// The pod layer's public surface: manifests → static pods → validated, merged desired pods.
export * from '../api/annotations.js';
export { PodConfig, podsDifferSemantically, type PodConfigOptions, type PodDiff } from './config.js';
export { StaticPodDirSource, type StaticPodDirSourceOptions } from './file-source.js';
export { PodManager } from './manager.js';
export { parseManifest, type ParsedManifest } from './manifest.js';
export { applyStaticPodDefaults, staticPodUID, staticPodUIDOf, type StaticPodOptions } from './static-pod.js';
