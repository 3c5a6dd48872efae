#!/usr/bin/env node
/**
 * `comfy-durable <command>`: `start` (embedded Temporal + worker + front), `worker`, `api`,
 * `contract <comfyui-url>` (check the ComfyUI client against a real server).
 */
import { loadConfig, ConfigError } from '../config/config.ts';
import { createLogger } from '../log.ts';
import { runServices, type Mode } from '../app/services.ts';
import { sanitizeForTerminal } from './sanitize.ts';
import { exitWhenWorkersEnd } from '../app/workers-end.ts';

const USAGE = `usage: comfy-durable <start|worker|api|gpu|contract URL|renders …>

  start      embedded Temporal dev server (unless TEMPORAL_ADDRESS), HTTP front, and the worker in a worker thread
  worker     Temporal workers only (TEMPORAL_ADDRESS, default 127.0.0.1:7233)
  api        HTTP front only
  gpu        the GPU worker inside a model-swapping proxy's GPU entry: serves /gpu/ready and /gpu/lease on
             HOST:PORT (the lease needs GPU_LEASE_TOKEN), runs prompts only while a front holds the lease;
             on stop, stops a prompt still running in ComfyUI and asks ComfyUI to unload
  contract   run the ComfyUI contract checks against URL (a real or fake ComfyUI)
  renders    operators: list, show, outputs, replay, cancel renders ('renders help' for details)
`;

async function runMode(mode: Mode): Promise<void> {
  let config;
  try {
    config = loadConfig();
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`${err.message}\n`);
      process.exit(2);
    }
    throw err;
  }
  const logger = createLogger(config.LOG_LEVEL);
  let running;
  try {
    running = await runServices(mode, config, logger);
  } catch (err) {
    // Settings only a mode can judge (GPU_LEASE_TOKEN in `gpu`): a message and exit 2, like loadConfig's.
    if (err instanceof ConfigError) {
      process.stderr.write(`${err.message}\n`);
      process.exit(2);
    }
    throw err;
  }
  logger.info({ mode, api: running.apiUrl, temporal: running.temporalAddress, temporalUi: running.uiUrl, comfyui: config.COMFYUI_URL }, 'comfy-durable ready');
  if (running.apiUrl) process.stdout.write(`comfy-durable listening on ${running.apiUrl}\n`);
  if (running.uiUrl) process.stdout.write(`Temporal Web UI on ${running.uiUrl}\nWARNING: ${running.uiWarning ?? ''}\n`);

  let stopping = false;
  let firstSignalAt = 0;
  const onSignal = (signal: NodeJS.Signals): void => {
    if (stopping) {
      // Ctrl+C reaches us twice (from the terminal's process group and forwarded by npm/tsx): only a
      // signal sent deliberately later means "exit now".
      if (Date.now() - firstSignalAt < 1_000) return;
      logger.warn({ signal }, 'second signal: exiting now');
      process.exit(130);
    }
    stopping = true;
    firstSignalAt = Date.now();
    logger.info({ signal }, 'draining: finishing in-flight work (send the signal again to exit at once)');
    running.stop().then(
      () => process.exit(0),
      (err: unknown) => {
        logger.error({ err }, 'error while stopping');
        process.exit(1);
      },
    );
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  exitWhenWorkersEnd(running.done, logger, () => stopping);
}

async function main(argv: string[]): Promise<void> {
  const [command, ...rest] = argv;
  switch (command) {
    case 'worker':
    case 'start':
    case 'api':
    case 'gpu':
      return runMode(command);
    case 'renders': {
      const { runRenders } = await import('./renders.ts');
      process.exitCode = await runRenders(rest);
      return;
    }
    case 'contract': {
      const { runContract } = await import('./contract.ts');
      process.exitCode = await runContract(rest);
      return;
    }
    default:
      process.stderr.write(USAGE);
      process.exit(command ? 2 : 0);
  }
}

main(process.argv.slice(2)).catch((err: unknown) => {
  process.stderr.write(sanitizeForTerminal(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`));
  process.exit(1);
});
