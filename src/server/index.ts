export { buildServer, type ServerOptions } from './app.js';
export type { VersionInfo, VersionOptions } from './plugins/discovery.js';
