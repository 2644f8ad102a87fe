#!/usr/bin/env -S node --initial-old-space-size=64
// V8 flag, why: every socket read is a fresh 64 KiB ArrayBuffer, about 16 000 per GiB relayed. With
// the old-generation limit V8 derives from nodelet's ~25 MB live heap, those bytes can set off a
// full mark-compact every ~30 MB moved: 30–40 per GiB, doubling the relay's CPU (bench/README.md,
// "GC storm"). A 64 MB floor under the limit keeps the collections in the young generation.
// `npm start`, the Dockerfile and the bench pass the same flag.
import { buildConfig, ConfigError } from './config/index.js';
import { createLogger } from './logging/index.js';
import { startNodelet } from './nodelet.js';

/**
 * `nodelet [flags]`: parse flags (kubelet names), start, and stop cleanly on SIGINT/SIGTERM.
 * Bad flags fail fast with one line on stderr and exit code 2, like the kubelet.
 */
async function main(argv: string[]): Promise<void> {
  let built: ReturnType<typeof buildConfig>;
  try {
    built = buildConfig(argv, process.env);
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`Error: ${err.message}\n`);
      process.exit(err.exitCode);
    }
    throw err;
  }
  if ('help' in built) {
    process.stdout.write(built.help);
    return;
  }
  const { config, warnings } = built;
  const log = createLogger({ verbosity: config.verbosity, format: config.loggingFormat });
  for (const warning of warnings) log.warn(warning);

  let nodelet: Awaited<ReturnType<typeof startNodelet>>;
  try {
    nodelet = await startNodelet(config, { log });
  } catch (err) {
    log.error({ err }, 'nodelet failed to start');
    // A setting only the start can check (the eviction thresholds) is a usage error too: exit 2.
    process.exit(err instanceof ConfigError ? err.exitCode : 1);
  }
  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    const graceful = config.shutdownGracePeriodMs > 0 && signal === 'SIGTERM';
    log.info({ signal }, graceful ? 'Shutting down; pods are stopped first (shutdownGracePeriod)' : 'Shutting down; pods keep running');
    const force = setTimeout(() => process.exit(1), 10_000 + (graceful ? config.shutdownGracePeriodMs : 0));
    force.unref();
    (graceful ? nodelet.shutdown() : Promise.resolve()).then(() => nodelet.close()).then(
      () => process.exit(0),
      (err: unknown) => {
        log.error({ err }, 'Error during shutdown');
        process.exit(1);
      },
    );
  };
  process.on('SIGINT', () => stop('SIGINT'));
  process.on('SIGTERM', () => stop('SIGTERM'));
}

await main(process.argv.slice(2));
