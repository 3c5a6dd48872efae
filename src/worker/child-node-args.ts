/** Node flags for a child process that runs our own code; no SDK import, so a front can use it cheaply. */
import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';

/** Run from dist/ (plain node on the compiled JavaScript, scripts/build.sh) rather than TypeScript via tsx. */
const compiled = import.meta.url.endsWith('.js');

/**
 * The node flags of this process for a child running our own code (the workflow bundler, `start`'s worker
 * process): compiled, it is plain JavaScript; under TypeScript it needs tsx's loader, added when the host runs
 * another loader (vitest). tsx is resolved only then: a production install of dist/ has no dev dependencies.
 */
export function childNodeArgs(): string[] {
  const execArgv = process.execArgv;
  if (compiled || execArgv.some((a) => a.includes('tsx'))) return execArgv;
  return [...execArgv, '--import', pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href];
}
