/**
 * docker-compose.yml as `docker compose` sees it: the Compose model (the subset this project uses) and Compose's
 * variable interpolation, applied strictly (a variable without a default and not set is an error). Shared by
 * test/unit/compose.test.ts and test/unit/compose-schema.test.ts.
 */
export type EnvValue = string | number | boolean | null;
export interface Healthcheck {
  test: string[] | string;
}
export interface DeviceRequest {
  driver?: string;
  count?: number | string;
  device_ids?: string[];
  capabilities?: string[];
}
export interface Service {
  image?: string;
  build?: { context: string; dockerfile?: string };
  command?: string[] | string;
  entrypoint?: string[] | string;
  environment?: Record<string, EnvValue> | string[];
  volumes?: string[];
  ports?: string[];
  expose?: string[];
  depends_on?: Record<string, { condition?: string }> | string[];
  healthcheck?: Healthcheck;
  restart?: string;
  init?: boolean;
  deploy?: { resources?: { reservations?: { devices?: DeviceRequest[] } } };
}
export interface Compose {
  name?: string;
  services: Record<string, Service>;
  volumes?: Record<string, unknown>;
}

export interface VarUse {
  name: string;
  op: string | undefined;
  arg: string | undefined;
}

export const VAR_RE = /\$\$|\$\{([A-Za-z_][A-Za-z0-9_]*)(?:(:?[-?+])([^}]*))?\}|\$([A-Za-z_][A-Za-z0-9_]*)/g;

export function interpolate(value: string, env: Record<string, string>, uses?: VarUse[]): string {
  return value.replace(VAR_RE, (match, braced: string | undefined, op: string | undefined, arg: string | undefined, bare: string | undefined) => {
    if (match === '$$') return '$';
    const name = (braced ?? bare)!;
    uses?.push({ name, op, arg });
    const v = env[name];
    switch (op) {
      case undefined:
        if (v === undefined) throw new Error(`\${${name}} has no default`);
        return v;
      case ':-':
        return v ? v : (arg ?? '');
      case '-':
        return v ?? arg ?? '';
      case ':?':
      case '?':
        if (!v) throw new Error(`\${${name}} is required: ${arg ?? ''}`);
        return v;
      case ':+':
        return v ? (arg ?? '') : '';
      case '+':
        return v !== undefined ? (arg ?? '') : '';
      default:
        throw new Error(`unknown interpolation ${match}`);
    }
  });
}

export function deepMapStrings(value: unknown, fn: (s: string) => string): unknown {
  if (typeof value === 'string') return fn(value);
  if (Array.isArray(value)) return value.map((v) => deepMapStrings(v, fn));
  if (value && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, deepMapStrings(v, fn)]));
  }
  return value;
}

export function parseEnvFile(text: string): Record<string, string> {
  const env: Record<string, string> = {};
  for (const line of text.split('\n')) {
    const t = line.trim();
    if (!t || t.startsWith('#')) continue;
    const eq = t.indexOf('=');
    if (eq <= 0) throw new Error(`bad .env line: ${line}`);
    env[t.slice(0, eq)] = t.slice(eq + 1);
  }
  return env;
}

export function environmentOf(s: Service): Record<string, string> {
  const env = s.environment ?? {};
  if (Array.isArray(env)) {
    return Object.fromEntries(
      env.map((e) => {
        const eq = e.indexOf('=');
        if (eq < 0) throw new Error(`environment entry without a value: ${e}`);
        return [e.slice(0, eq), e.slice(eq + 1)];
      }),
    );
  }
  return Object.fromEntries(
    Object.entries(env).map(([k, v]) => {
      if (v === null) throw new Error(`environment ${k} has no value`);
      return [k, String(v)];
    }),
  );
}

export function list(v: string[] | string | undefined): string[] {
  if (v === undefined) return [];
  return Array.isArray(v) ? v : [v];
}

export interface Mount {
  source: string;
  target: string;
  readOnly: boolean;
  named: boolean;
}
export function mounts(s: Service): Mount[] {
  return (s.volumes ?? []).map((v) => {
    const parts = v.split(':');
    if (parts.length < 2 || parts.length > 3) throw new Error(`unexpected volume syntax: ${v}`);
    const [source, target, mode] = parts as [string, string, string | undefined];
    return { source, target, readOnly: mode === 'ro', named: !/^[./~]/.test(source) };
  });
}
