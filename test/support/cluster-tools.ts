/**
 * Finds the Go-built servers that scripts/setup-cluster-tools.sh puts in the machine's cache dir (versitygw,
 * Temporal server, temporal-sql-tool). An explicit env var wins (VERSITYGW_BIN, ...); otherwise the script's
 * tools.env. Missing in CI (`CI` set) is a failure, never a silent skip: .ci/run runs the script first.
 */
import { existsSync, readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

export type ToolKey = 'VERSITYGW_BIN' | 'TEMPORAL_SERVER_BIN' | 'TEMPORAL_SQL_TOOL_BIN' | 'TEMPORAL_SCHEMA_DIR';

function toolsEnvFile(): string {
  if (process.env.COMFY_DURABLE_TOOLS_ENV) return process.env.COMFY_DURABLE_TOOLS_ENV;
  const cacheRoot = process.env.COMFY_DURABLE_CACHE ?? path.join(process.env.XDG_CACHE_HOME ?? path.join(os.homedir(), '.cache'), 'comfy-durable');
  return path.join(cacheRoot, 'tools', 'tools.env');
}

function fromToolsEnv(key: ToolKey): string | undefined {
  const file = toolsEnvFile();
  if (!existsSync(file)) return undefined;
  for (const line of readFileSync(file, 'utf8').split('\n')) {
    const eq = line.indexOf('=');
    if (eq > 0 && line.slice(0, eq) === key) return line.slice(eq + 1).trim();
  }
  return undefined;
}

/** The tool's path, or why it is missing. */
export function locateTool(key: ToolKey): { path: string } | { missing: string } {
  const candidate = process.env[key] || fromToolsEnv(key);
  if (candidate && existsSync(candidate)) return { path: candidate };
  const script = key === 'VERSITYGW_BIN' ? 'scripts/setup-cluster-tools.sh versitygw' : 'scripts/setup-cluster-tools.sh temporal';
  return {
    missing: candidate
      ? `${key}=${candidate} does not exist; run \`bash ${script}\``
      : `${key} is not set and ${toolsEnvFile()} does not name it; run \`bash ${script}\``,
  };
}

/**
 * For `describe.skipIf`: true (skip, printing why) when a tool is missing outside CI. In CI a missing tool
 * throws at collection time, failing the file.
 */
export function skipUnlessTools(suite: string, ...keys: ToolKey[]): boolean {
  const missing = keys.map(locateTool).flatMap((r) => ('missing' in r ? [r.missing] : []));
  if (missing.length === 0) return false;
  const why = `${suite}: ${missing.join('; ')}`;
  if (process.env.CI) throw new Error(`${why} (CI must run scripts/setup-cluster-tools.sh before the tests)`);
  console.warn(`skipping ${why}`);
  return true;
}

export function toolPath(key: ToolKey): string {
  const r = locateTool(key);
  if ('missing' in r) throw new Error(r.missing);
  return r.path;
}
