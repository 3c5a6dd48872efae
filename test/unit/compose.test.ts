/**
 * The production path (docker-compose.yml, Dockerfile, docker/**) cannot run on a machine without a Docker
 * engine, so it is checked here against the code it deploys: the env the worker and API get must load with
 * the app's own config loader, commands must be CLI commands, search attributes must be the app's, images
 * pinned, dependencies acyclic, addresses pointing at the right services and ports, and the setup scripts
 * must do the right thing when run against stub Temporal tools.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse } from 'yaml';
import { afterAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/config.ts';
import { SEARCH_ATTRIBUTES } from '../../src/contracts/search-attributes.ts';
import {
  deepMapStrings,
  environmentOf,
  interpolate,
  list,
  mounts,
  parseEnvFile,
  type Compose,
  type Mount,
  type Service,
  type VarUse,
} from '../support/compose-file.ts';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const read = (rel: string): string => fs.readFileSync(path.join(ROOT, rel), 'utf8');

const composeText = read('docker-compose.yml');
const rawCompose = parse(composeText, { merge: true }) as Compose;
const varUses: VarUse[] = [];
/** The compose model as `docker compose` would see it with no .env and an empty environment. */
const compose = deepMapStrings(rawCompose, (s) => interpolate(s, {}, varUses)) as Compose;
const envExample = parseEnvFile(read('.env.example'));
/** The same with the documented example values. */
const composeWithExample = deepMapStrings(rawCompose, (s) => interpolate(s, envExample)) as Compose;

function service(name: string, c: Compose = compose): Service {
  const s = c.services[name];
  if (!s) throw new Error(`service ${name} missing from docker-compose.yml`);
  return s;
}

function dependsOn(s: Service): Record<string, string> {
  const d = s.depends_on ?? {};
  if (Array.isArray(d)) return Object.fromEntries(d.map((n) => [n, 'service_started']));
  return Object.fromEntries(Object.entries(d).map(([n, v]) => [n, v.condition ?? 'service_started']));
}

interface Published {
  ip: string | undefined;
  hostPort: string;
  containerPort: string;
}
function published(s: Service): Published[] {
  return (s.ports ?? []).map((p) => {
    const parts = String(p)
      .replace(/\/(tcp|udp)$/, '')
      .split(':');
    if (parts.length === 3) return { ip: parts[0], hostPort: parts[1]!, containerPort: parts[2]! };
    if (parts.length === 2) return { ip: undefined, hostPort: parts[0]!, containerPort: parts[1]! };
    return { ip: undefined, hostPort: '', containerPort: parts[0]! };
  });
}

function imageParts(image: string): { repo: string; tag: string | undefined; digest: string | undefined } {
  const [nameTag, digest] = image.split('@') as [string, string | undefined];
  const slash = nameTag.lastIndexOf('/');
  const colon = nameTag.lastIndexOf(':');
  if (colon > slash) return { repo: nameTag.slice(0, colon), tag: nameTag.slice(colon + 1), digest };
  return { repo: nameTag, tag: undefined, digest };
}

function healthText(s: Service): string {
  return list(s.healthcheck?.test).join(' ');
}

// ---------------------------------------------------------------------------------------------------------
// Facts read from the code the compose file deploys.

/** Keys of the zod env schema in src/config/config.ts (read from its source: the schema is not exported). */
const configSource = read('src/config/config.ts');
const schemaBlock = /const envSchema = z\.object\(\{([\s\S]*?)\n\}\);/.exec(configSource)?.[1] ?? '';
const SCHEMA_KEYS = new Set([...schemaBlock.matchAll(/^ {2}([A-Z][A-Z0-9_]*):/gm)].map((m) => m[1]!));

/** Commands the CLI accepts: the case labels of main()'s switch in src/cli/main.ts. */
const CLI_COMMANDS = new Set([...read('src/cli/main.ts').matchAll(/case '([a-z-]+)':/g)].map((m) => m[1]!));

const packageJson = JSON.parse(read('package.json')) as {
  version: string;
  engines?: { node?: string };
  dependencies?: Record<string, string>;
  devDependencies?: Record<string, string>;
};

interface Instruction {
  op: string;
  args: string;
}
function dockerfile(rel: string): Instruction[] {
  const joined = read(rel).replace(/\\\r?\n/g, ' ');
  return joined
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l && !l.startsWith('#'))
    .map((l) => {
      const sp = l.search(/\s/);
      return { op: l.slice(0, sp).toUpperCase(), args: l.slice(sp + 1).trim() };
    });
}
const appDockerfile = dockerfile('Dockerfile');
const comfyDockerfile = dockerfile('docker/comfyui.Dockerfile');
const only = (ins: Instruction[], op: string): string[] => ins.filter((i) => i.op === op).map((i) => i.args);
function execForm(ins: Instruction[], op: string): string[] {
  const all = only(ins, op);
  expect(all, `${op} appears once`).toHaveLength(1);
  const parsed: unknown = JSON.parse(all[0]!);
  expect(Array.isArray(parsed), `${op} uses the exec (JSON) form`).toBe(true);
  return parsed as string[];
}
function dockerArgs(ins: Instruction[]): Record<string, string> {
  return Object.fromEntries(
    only(ins, 'ARG').map((a) => {
      const eq = a.indexOf('=');
      return eq < 0 ? [a, ''] : [a.slice(0, eq), a.slice(eq + 1)];
    }),
  );
}
function dockerEnv(ins: Instruction[]): Record<string, string> {
  const env: Record<string, string> = {};
  for (const a of only(ins, 'ENV')) for (const m of a.matchAll(/\b([A-Za-z_]\w*)=(\S+)/g)) env[m[1]!] = m[2]!;
  return env;
}

/** Port each service listens on inside the compose network, as set up by its own configuration. */
function listenPorts(): Record<string, string> {
  const comfyCmd = list(service('comfyui').command);
  const apiEnv = environmentOf(service('api'));
  const temporalHealth = list(service('temporal').healthcheck?.test);
  return {
    postgresql: '5432', // the postgres image default
    temporal: temporalHealth[temporalHealth.length - 1]!, // the server's frontend port, as health-checked
    'temporal-ui': '8080', // the temporalio/ui default
    comfyui: comfyCmd[comfyCmd.indexOf('--port') + 1]!,
    api: apiEnv.PORT!,
  };
}

const APP_SERVICES = ['worker', 'api'] as const;

// ---------------------------------------------------------------------------------------------------------

describe('docker-compose.yml', () => {
  it('defines the production services', () => {
    expect(Object.keys(compose.services).sort()).toEqual(
      ['api', 'comfyui', 'postgresql', 'temporal', 'temporal-admin-tools', 'temporal-create-namespace', 'temporal-ui', 'worker'].sort(),
    );
  });

  it('gives every variable a default and documents exactly the variables it reads in .env.example', () => {
    const names = new Set(varUses.map((u) => u.name));
    for (const u of varUses) {
      expect([':-', '-'], `\${${u.name}} needs a default so .env stays optional`).toContain(u.op);
    }
    expect(Object.keys(envExample).sort()).toEqual([...names].sort());
    // The documented values are the defaults (the example changes nothing until edited).
    for (const u of varUses) expect(envExample[u.name], u.name).toBe(u.arg);
  });

  it('pins every image to a version (no latest, no untagged)', () => {
    for (const [name, s] of Object.entries(compose.services)) {
      expect(s.image, `${name} has an image`).toBeTruthy();
      const { tag, digest } = imageParts(s.image!);
      expect(tag ?? digest, `${name}: ${s.image} is pinned`).toBeTruthy();
      expect(tag, `${name}: ${s.image}`).not.toBe('latest');
    }
    // The Temporal version the cluster test (test/cluster) builds from the Go module proxy and runs.
    const clusterVersion = /^TEMPORAL_SERVER_VERSION=v(\S+)$/m.exec(read('scripts/setup-cluster-tools.sh'))?.[1];
    expect(clusterVersion).toBeTruthy();
    expect(service('temporal').image).toBe(`temporalio/server:${clusterVersion}`);
    expect(service('temporal-admin-tools').image).toBe(`temporalio/admin-tools:${clusterVersion}`);
    expect(service('temporal-create-namespace').image).toBe(`temporalio/admin-tools:${clusterVersion}`);
    expect(service('temporal-ui').image).toBe('temporalio/ui:2.34.0');
    expect(imageParts(service('postgresql').image!).tag).toMatch(/^16(\.\d+)?$/);
    // Our image: built here, tagged with the package version; worker and api run the same one.
    expect(service('worker').image).toBe(`comfy-durable:${packageJson.version}`);
    expect(service('api').image).toBe(service('worker').image);
    for (const n of APP_SERVICES) expect(service(n).build).toEqual({ context: '.', dockerfile: 'Dockerfile' });
    // ComfyUI image: built from docker/comfyui.Dockerfile; its tag names the pinned sources it contains.
    const comfy = service('comfyui');
    expect(comfy.build).toBeDefined();
    expect(fs.existsSync(path.join(ROOT, comfy.build!.context, comfy.build!.dockerfile ?? 'Dockerfile'))).toBe(true);
    const args = dockerArgs(comfyDockerfile);
    expect(imageParts(comfy.image!).tag).toBe(`${args.COMFYUI_REF}-gguf-${args.COMFYUI_GGUF_COMMIT!.slice(0, 7)}`);
  });

  it('depends_on refers to existing services with valid conditions and has no cycles', () => {
    const names = new Set(Object.keys(compose.services));
    for (const [name, s] of Object.entries(compose.services)) {
      for (const [dep, condition] of Object.entries(dependsOn(s))) {
        expect(names.has(dep), `${name} depends on unknown ${dep}`).toBe(true);
        expect(['service_started', 'service_healthy', 'service_completed_successfully']).toContain(condition);
        const target = service(dep);
        if (condition === 'service_healthy') expect(target.healthcheck, `${dep} needs a healthcheck for ${name}`).toBeDefined();
        if (condition === 'service_completed_successfully') {
          expect(target.restart, `${dep} is a one-shot job`).toBe('no');
        }
      }
    }
    // Cycle check (depth-first, colouring).
    const state = new Map<string, 'visiting' | 'done'>();
    const visit = (n: string, trail: string[]): void => {
      if (state.get(n) === 'done') return;
      if (state.get(n) === 'visiting') throw new Error(`dependency cycle: ${[...trail, n].join(' -> ')}`);
      state.set(n, 'visiting');
      for (const d of Object.keys(dependsOn(service(n)))) visit(d, [...trail, n]);
      state.set(n, 'done');
    };
    for (const n of names) expect(() => visit(n, [])).not.toThrow();

    // The startup chain of the samples-server recipe, then our services after the namespace exists.
    expect(dependsOn(service('temporal-admin-tools'))).toEqual({ postgresql: 'service_healthy' });
    expect(dependsOn(service('temporal'))).toEqual({ 'temporal-admin-tools': 'service_completed_successfully' });
    expect(dependsOn(service('temporal-create-namespace'))).toEqual({ temporal: 'service_healthy' });
    expect(dependsOn(service('temporal-ui'))).toEqual({ temporal: 'service_healthy' });
    for (const n of APP_SERVICES) {
      expect(dependsOn(service(n))['temporal-create-namespace']).toBe('service_completed_successfully');
    }
    expect(dependsOn(service('worker')).comfyui).toBe('service_healthy');
  });

  it('worker and api environments are config keys and load with the app config loader', () => {
    expect(SCHEMA_KEYS.size).toBeGreaterThan(10);
    for (const k of ['HOST', 'PORT', 'DATA_DIR', 'COMFYUI_URL', 'TEMPORAL_ADDRESS', 'API_TOKEN']) expect(SCHEMA_KEYS).toContain(k);
    for (const variant of [compose, composeWithExample]) {
      for (const n of APP_SERVICES) {
        const env = environmentOf(service(n, variant));
        for (const k of Object.keys(env)) expect(SCHEMA_KEYS, `${n}: ${k} is not read by src/config/config.ts`).toContain(k);
        const config = loadConfig(env);
        // Without TEMPORAL_ADDRESS `worker`/`api` would dial 127.0.0.1 inside their own container.
        expect(config.TEMPORAL_ADDRESS, n).toBe('temporal:7233');
        expect(config.COMFYUI_URL, n).toEqual(['http://comfyui:8188']);
        expect(config.dataDir, n).toBe('/data');
      }
      const api = loadConfig(environmentOf(service('api', variant)));
      expect(api.HOST).toBe('0.0.0.0'); // reachable through the published port
      expect(api.API_TOKEN).toBeUndefined(); // empty passthrough = no auth, not an empty token
    }
    // A token given to compose reaches the API.
    const withToken = deepMapStrings(rawCompose, (s) => interpolate(s, { API_TOKEN: 's3cret' })) as Compose;
    expect(loadConfig(environmentOf(service('api', withToken))).API_TOKEN).toBe('s3cret');
    // Settings that define task queues and backends must agree between the two processes.
    const worker = environmentOf(service('worker'));
    const api = environmentOf(service('api'));
    for (const k of ['TEMPORAL_ADDRESS', 'TEMPORAL_NAMESPACE', 'TEMPORAL_TASK_QUEUE', 'COMFYUI_URL', 'DATA_DIR', 'DEFAULT_MODEL']) {
      expect(worker[k], k).toBeDefined();
      expect(api[k], k).toBe(worker[k]);
    }
  });

  it('runs commands the CLI accepts', () => {
    expect(CLI_COMMANDS).toEqual(new Set(['start', 'worker', 'api', 'gpu', 'contract', 'renders']));
    expect(list(service('worker').command)).toEqual(['worker']);
    expect(list(service('api').command)).toEqual(['api']);
    for (const n of APP_SERVICES) expect(CLI_COMMANDS).toContain(list(service(n).command)[0]);
  });

  it('worker and api share one named blob volume mounted at DATA_DIR', () => {
    const blobMount = (n: string): Mount => {
      const dataDir = environmentOf(service(n)).DATA_DIR!;
      const m = mounts(service(n)).find((x) => x.target === dataDir);
      if (!m) throw new Error(`${n}: nothing mounted at DATA_DIR=${dataDir}`);
      return m;
    };
    const w = blobMount('worker');
    const a = blobMount('api');
    expect(w.named).toBe(true);
    expect(w.source).toBe('blobs');
    expect(a).toEqual(w);
    expect(w.readOnly).toBe(false);
    // The image's DATA_DIR (used by `docker run`) is the same path.
    expect(dockerEnv(appDockerfile).DATA_DIR).toBe(w.target);
  });

  it('declares every named volume it uses, uses every one it declares, and bind-mounts existing paths', () => {
    const declared = new Set(Object.keys(compose.volumes ?? {}));
    const used = new Set<string>();
    for (const [name, s] of Object.entries(compose.services)) {
      for (const m of mounts(s)) {
        if (m.named) {
          expect(declared.has(m.source), `${name}: volume ${m.source} not declared`).toBe(true);
          used.add(m.source);
        } else if (m.source !== './models') {
          expect(fs.existsSync(path.join(ROOT, m.source)), `${name}: ${m.source} exists in the repo`).toBe(true);
        }
      }
    }
    expect([...used].sort()).toEqual([...declared].sort());
  });

  it('addresses point at services and the ports they listen on', () => {
    const ports = listenPorts();
    expect(ports).toEqual({ postgresql: '5432', temporal: '7233', 'temporal-ui': '8080', comfyui: '8188', api: '7860' });
    const names = new Set(Object.keys(compose.services));
    let checked = 0;
    for (const [name, s] of Object.entries(compose.services)) {
      for (const [k, v] of Object.entries(environmentOf(s))) {
        for (const m of v.matchAll(/(?:^|[/,\s])([a-z][a-z0-9-]*):(\d+)/g)) {
          const host = m[1]!;
          if (!names.has(host)) continue;
          expect(m[2], `${name}.${k}=${v}: ${host} listens on ${ports[host]}`).toBe(ports[host]);
          checked++;
        }
      }
    }
    expect(checked).toBeGreaterThanOrEqual(6);
    // Database host settings name the postgresql service on its port.
    for (const n of ['temporal-admin-tools', 'temporal']) {
      expect(environmentOf(service(n)).POSTGRES_SEEDS).toBe('postgresql');
      expect(environmentOf(service(n)).DB_PORT).toBe(ports.postgresql);
    }
    // Published ports map to the port the service listens on, bound to localhost by default.
    const publishing = Object.entries(compose.services).filter(([, s]) => (s.ports ?? []).length > 0);
    expect(publishing.map(([n]) => n).sort()).toEqual(['api', 'temporal', 'temporal-ui']);
    for (const [name, s] of publishing) {
      for (const p of published(s)) {
        expect(p.containerPort, name).toBe(ports[name]);
        expect(p.ip, `${name} binds to 127.0.0.1 by default`).toBe('127.0.0.1');
      }
    }
    expect(published(service('api'))).toEqual([{ ip: '127.0.0.1', hostPort: '7860', containerPort: '7860' }]);
    expect(published(service('temporal-ui'))[0]!.containerPort).toBe('8080');
    // Health checks probe the same ports.
    expect(healthText(service('api'))).toContain(`127.0.0.1:${ports.api}/health`);
    expect(healthText(service('comfyui'))).toContain(`127.0.0.1:${ports.comfyui}/system_stats`);
  });

  it('registers exactly the app search attributes, with their types, in the app namespace', () => {
    const setup = environmentOf(service('temporal-create-namespace'));
    const pairs = setup
      .SEARCH_ATTRIBUTES!.trim()
      .split(/\s+/)
      .map((p) => p.split('='));
    expect(pairs.map(([n]) => n).sort()).toEqual(SEARCH_ATTRIBUTES.map((k) => k.name).sort());
    const composeType: Record<string, string> = { KEYWORD: 'Keyword', KEYWORD_LIST: 'KeywordList' };
    for (const [n, type] of pairs) expect(type, n).toBe(composeType[SEARCH_ATTRIBUTES.find((k) => k.name === n)!.type]);
    expect(setup.TEMPORAL_NAMESPACE).toBe(environmentOf(service('worker')).TEMPORAL_NAMESPACE);
    expect(setup.TEMPORAL_ADDRESS).toBe(environmentOf(service('worker')).TEMPORAL_ADDRESS);
    expect(environmentOf(service('temporal-ui')).TEMPORAL_DEFAULT_NAMESPACE).toBe(setup.TEMPORAL_NAMESPACE);
  });

  it('runs Temporal on PostgreSQL with the same credentials everywhere', () => {
    const pg = environmentOf(service('postgresql'));
    const tools = environmentOf(service('temporal-admin-tools'));
    const server = environmentOf(service('temporal'));
    expect(server.DB).toBe('postgres12');
    expect(server.BIND_ON_IP).toBe('0.0.0.0');
    expect(tools.POSTGRES_USER).toBe(pg.POSTGRES_USER);
    expect(server.POSTGRES_USER).toBe(pg.POSTGRES_USER);
    expect(tools.SQL_PASSWORD).toBe(pg.POSTGRES_PASSWORD);
    expect(server.POSTGRES_PWD).toBe(pg.POSTGRES_PASSWORD);
    expect(mounts(service('postgresql'))).toContainEqual({ source: 'postgresql-data', target: '/var/lib/postgresql/data', readOnly: false, named: true });
    expect(healthText(service('postgresql'))).toContain('pg_isready');
    // The dynamic config file the server is told to load exists in the mounted directory (workdir /etc/temporal).
    const dcMount = mounts(service('temporal')).find((m) => m.target === '/etc/temporal/config/dynamicconfig');
    expect(dcMount?.readOnly).toBe(true);
    const dcFile = path.posix.relative('config/dynamicconfig', server.DYNAMIC_CONFIG_FILE_PATH!);
    const dc = parse(fs.readFileSync(path.join(ROOT, dcMount!.source, dcFile), 'utf8')) as Record<string, unknown>;
    expect(dc['limit.maxIDLength']).toBeDefined();
    expect(dc['system.forceSearchAttributesCacheRefreshOnRead'], 'dev-only setting').toBeUndefined();
    // Priority and FIFO are strict only on one partition: the GPU queue of the compose task queue has one.
    const gpuQueue = `${environmentOf(service('worker')).TEMPORAL_TASK_QUEUE}-gpu`;
    for (const key of ['matching.numTaskqueueReadPartitions', 'matching.numTaskqueueWritePartitions']) {
      expect(dc[key], key).toEqual([{ value: 1, constraints: { taskQueueName: gpuQueue } }]);
    }
    // The one-shot jobs run scripts that exist in the repo through their mount.
    for (const n of ['temporal-admin-tools', 'temporal-create-namespace']) {
      const ep = list(service(n).entrypoint);
      const script = ep[ep.length - 1]!;
      const m = mounts(service(n)).find((x) => script.startsWith(`${x.target}/`));
      expect(m, `${n}: ${script} is mounted`).toBeDefined();
      expect(fs.existsSync(path.join(ROOT, m!.source, script.slice(m!.target.length + 1))), script).toBe(true);
    }
  });

  it('runs ComfyUI on an NVIDIA GPU with read-only models, inside the network only', () => {
    const comfy = service('comfyui');
    const devices = comfy.deploy?.resources?.reservations?.devices ?? [];
    expect(devices).toHaveLength(1);
    expect(devices[0]!.driver).toBe('nvidia');
    expect(devices[0]!.capabilities).toContain('gpu');
    expect(mounts(comfy)).toContainEqual({ source: './models', target: '/opt/ComfyUI/models', readOnly: true, named: false });
    expect(rawCompose.services.comfyui!.volumes).toContain('${MODELS_DIR:-./models}:/opt/ComfyUI/models:ro');
    const targets = mounts(comfy).map((m) => m.target);
    expect(targets).toContain('/opt/ComfyUI/input');
    expect(targets).toContain('/opt/ComfyUI/output');
    expect(comfy.ports).toBeUndefined();
    expect(comfy.expose).toEqual(['8188']);
    const cmd = list(comfy.command);
    expect(cmd.slice(cmd.indexOf('--listen'), cmd.indexOf('--listen') + 2)).toEqual(['--listen', '0.0.0.0']);
    // Same command as the image's default.
    expect(execForm(comfyDockerfile, 'CMD')).toEqual(cmd);
  });

  const composeCli = spawnSync('docker', ['compose', 'version'], { encoding: 'utf8' });
  const composeAvailable = composeCli.status === 0;
  const composeReason = composeAvailable
    ? ''
    : ` (skipped: \`docker compose\` plugin unavailable: ${(composeCli.error?.message ?? composeCli.stderr ?? '').trim().split('\n')[0]})`;
  it.skipIf(!composeAvailable)(`is accepted by \`docker compose config -q\`${composeReason}`, () => {
    for (const extra of [[], ['--env-file', '.env.example']]) {
      const r = spawnSync('docker', ['compose', '-f', 'docker-compose.yml', ...extra, 'config', '-q'], {
        cwd: ROOT,
        encoding: 'utf8',
        env: { ...process.env, COMPOSE_PROJECT_NAME: 'comfy-durable-test' },
      });
      expect(r.status, r.stderr).toBe(0);
    }
  });
});

describe('Dockerfile (comfy-durable image)', () => {
  it('is Debian-based Node 20 (glibc for the Temporal core-bridge), pinned, the same base in both stages', () => {
    const from = only(appDockerfile, 'FROM');
    expect(from).toHaveLength(2);
    expect(from[0]).toMatch(/ AS build$/);
    const bases = from.map((f) => f.split(/\s+/)[0]!);
    expect(new Set(bases).size, 'build and runtime stages share the base image').toBe(1);
    const { repo, tag } = imageParts(bases[0]!);
    expect(repo).toBe('node');
    expect(tag).toMatch(/^20\.\d+\.\d+-(bookworm|bullseye|trixie)(-slim)?$/);
    expect(from.join(' ')).not.toMatch(/alpine/i);
    // Satisfies package.json engines (>= x.y.z).
    const want = /^>=(\d+)\.(\d+)\.(\d+)$/.exec(packageJson.engines?.node ?? '')!;
    const have = /^(\d+)\.(\d+)\.(\d+)/.exec(tag!)!;
    const num = (m: RegExpExecArray): number => Number(m[1]) * 1e6 + Number(m[2]) * 1e3 + Number(m[3]);
    expect(num(have)).toBeGreaterThanOrEqual(num(want));
  });

  it("compiles with npm start's build, keeps production dependencies only (tsx among them), and copies what runs", () => {
    const runs = only(appDockerfile, 'RUN');
    expect(runs.some((r) => /\bnpm ci\b/.test(r))).toBe(true);
    expect(runs.some((r) => /bash scripts\/build\.sh --force/.test(r) && /\bnpm prune --omit=dev\b/.test(r))).toBe(true);
    expect(packageJson.dependencies?.tsx, 'tsx is a runtime dependency').toBeDefined();
    expect(packageJson.devDependencies?.tsx).toBeUndefined();
    const copies = only(appDockerfile, 'COPY');
    const copied = copies.filter((c) => !c.startsWith('--from=')).flatMap((c) => c.split(/\s+/).slice(0, -1));
    for (const p of ['package.json', 'package-lock.json', 'tsconfig.json', 'tsconfig.build.json', 'scripts/build.sh', 'bin', 'src'])
      expect(copied).toContain(p);
    for (const p of ['/app/node_modules', '/app/dist']) expect(copies.some((c) => c.startsWith('--from=build ') && c.includes(p))).toBe(true);
    const ignored = read('.dockerignore')
      .split('\n')
      .map((l) => l.trim())
      .filter((l) => l && !l.startsWith('#'));
    for (const p of copied) expect(ignored, `${p} is copied, so not ignored`).not.toContain(p);
    for (const p of ['node_modules', '.git', 'models', 'data', '.env']) expect(ignored).toContain(p);
  });

  it('starts the compiled CLI as non-root, with a CLI command as default and /data as volume', () => {
    const entry = execForm(appDockerfile, 'ENTRYPOINT');
    // node with the V8 heap flags `npm start` uses (scripts/run.sh's default SERVICE_NODE_FLAGS), then the CLI.
    const runFlags = /\$\{SERVICE_NODE_FLAGS-([^}]*)\}/.exec(read('scripts/run.sh'))?.[1]?.split(/\s+/).filter(Boolean);
    expect(runFlags?.length, 'scripts/run.sh names its default V8 flags').toBeGreaterThan(0);
    expect(entry).toEqual(['node', ...runFlags!, 'dist/cli/main.js']);
    // dist/ mirrors src/ (tsconfig.build.json: rootDir src): the entry is the build of src/cli/main.ts.
    expect(
      fs.existsSync(
        path.join(
          ROOT,
          entry
            .at(-1)!
            .replace(/^dist\//, 'src/')
            .replace(/\.js$/, '.ts'),
        ),
      ),
    ).toBe(true);
    const cmd = execForm(appDockerfile, 'CMD');
    expect(cmd).toEqual(['api']);
    expect(CLI_COMMANDS).toContain(cmd[0]);
    expect(only(appDockerfile, 'USER')).toEqual(['node']);
    expect(only(appDockerfile, 'VOLUME').join(' ')).toContain('/data');
    // Image defaults are config keys and load.
    const env = dockerEnv(appDockerfile);
    // glibc's malloc tunables are the C library's, as scripts/run.sh sets them; the rest are config keys.
    const runSh = read('scripts/run.sh');
    for (const k of Object.keys(env)) {
      if (k.startsWith('MALLOC_')) expect(runSh, `${k} as npm start sets it`).toContain(`${k}="\${${k}:-${env[k]}}"`);
      else expect(SCHEMA_KEYS).toContain(k);
    }
    expect(loadConfig(env).HOST).toBe('0.0.0.0');
  });
});

describe('docker/comfyui.Dockerfile', () => {
  it('pins a CUDA base image, ComfyUI v0.33.0 and ComfyUI-GGUF at a commit', () => {
    const from = only(comfyDockerfile, 'FROM');
    expect(from).toHaveLength(1);
    const { repo, tag } = imageParts(from[0]!);
    expect(repo).toBe('nvidia/cuda');
    expect(tag).toMatch(/^\d+\.\d+\.\d+-[a-z-]+-ubuntu\d+\.\d+$/);
    const args = dockerArgs(comfyDockerfile);
    expect(args.COMFYUI_REF).toBe('v0.33.0');
    expect(args.COMFYUI_COMMIT).toMatch(/^[0-9a-f]{40}$/);
    expect(args.COMFYUI_GGUF_COMMIT).toBe('795e45156ece99afbc3efef911e63fcb46e6a20d');
    for (const k of ['TORCH_VERSION', 'TORCHVISION_VERSION', 'TORCHAUDIO_VERSION']) expect(args[k], k).toMatch(/^\d+\.\d+\.\d+$/);
    const run = only(comfyDockerfile, 'RUN').join('\n');
    expect(run).toContain('https://github.com/comfyanonymous/ComfyUI.git');
    expect(run).toContain('--branch "${COMFYUI_REF}"');
    expect(run).toContain('https://github.com/city96/ComfyUI-GGUF.git');
    expect(run).toContain('/opt/ComfyUI/custom_nodes/ComfyUI-GGUF');
    expect(run).toContain('fetch -q --depth 1 origin "${COMFYUI_GGUF_COMMIT}"');
    expect(run).toContain('"gguf>=0.13.0" sentencepiece protobuf');
    expect(run).toContain('-r /opt/ComfyUI/requirements.txt');
  });

  it('listens on all interfaces of its container on 8188 as a non-root user', () => {
    expect(execForm(comfyDockerfile, 'CMD')).toEqual(['python', 'main.py', '--listen', '0.0.0.0', '--port', '8188']);
    expect(only(comfyDockerfile, 'USER')).toEqual(['comfy']);
    expect(only(comfyDockerfile, 'WORKDIR')).toEqual(['/opt/ComfyUI']);
  });
});

// ---------------------------------------------------------------------------------------------------------
// The setup scripts, run for real with /bin/sh against stub `temporal`, `temporal-sql-tool`, `nc`, `sleep`.

const tmpDirs: string[] = [];
afterAll(() => {
  for (const d of tmpDirs) fs.rmSync(d, { recursive: true, force: true });
});

const TEMPORAL_STUB = `#!/bin/sh
echo "temporal $*" >> "$STUB_DIR/log"
case "$*" in
  "operator cluster health"*)
    n=$(cat "$STUB_DIR/health" 2>/dev/null || echo 0)
    if [ "$n" -lt "\${STUB_HEALTH_FAILURES:-0}" ]; then echo $((n + 1)) > "$STUB_DIR/health"; exit 1; fi
    echo SERVING ;;
  "operator namespace describe"*)
    [ -f "$STUB_DIR/namespace" ] || exit 1 ;;
  "operator namespace create"*)
    touch "$STUB_DIR/namespace" ;;
  "operator search-attribute create"*)
    prev=
    for a in "$@"; do
      if [ "$prev" = --name ] && [ "\${STUB_LOSE_ATTRIBUTES:-0}" != 1 ]; then echo "$a Keyword" >> "$STUB_DIR/attrs"; fi
      prev=$a
    done ;;
  "operator search-attribute list"*)
    echo "WorkflowId Keyword"
    cat "$STUB_DIR/attrs" 2>/dev/null || true ;;
  *) echo "unexpected: $*" >&2; exit 3 ;;
esac
`;

function stubDir(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'compose-test-'));
  tmpDirs.push(dir);
  const bin = path.join(dir, 'bin');
  fs.mkdirSync(bin);
  const write = (name: string, body: string): void => fs.writeFileSync(path.join(bin, name), body, { mode: 0o755 });
  write('temporal', TEMPORAL_STUB);
  write('temporal-sql-tool', '#!/bin/sh\necho "temporal-sql-tool $*" >> "$STUB_DIR/log"\n');
  write('nc', '#!/bin/sh\necho "nc $*" >> "$STUB_DIR/log"\n');
  write('sleep', '#!/bin/sh\n');
  return dir;
}

function runJob(serviceName: string, extraEnv: Record<string, string>, prepare?: (dir: string) => void) {
  const s = service(serviceName);
  const ep = list(s.entrypoint);
  const script = ep[ep.length - 1]!;
  const m = mounts(s).find((x) => script.startsWith(`${x.target}/`))!;
  const hostScript = path.join(ROOT, m.source, script.slice(m.target.length + 1));
  const dir = stubDir();
  prepare?.(dir);
  const r = spawnSync('/bin/sh', [hostScript], {
    encoding: 'utf8',
    env: { PATH: `${path.join(dir, 'bin')}:/usr/bin:/bin`, STUB_DIR: dir, ...environmentOf(s), ...extraEnv },
  });
  const log = fs.existsSync(path.join(dir, 'log')) ? fs.readFileSync(path.join(dir, 'log'), 'utf8').trim().split('\n') : [];
  return { status: r.status, stdout: r.stdout, stderr: r.stderr, log };
}

describe('setup scripts', () => {
  it('are valid POSIX sh', () => {
    for (const f of ['docker/temporal/setup-postgres.sh', 'docker/temporal/create-namespace.sh']) {
      const r = spawnSync('/bin/sh', ['-n', path.join(ROOT, f)], { encoding: 'utf8' });
      expect(r.status, `${f}: ${r.stderr}`).toBe(0);
    }
  });

  it('temporal-admin-tools creates and migrates both databases with the postgres12 plugin', () => {
    const r = runJob('temporal-admin-tools', {});
    expect(r.status, r.stderr).toBe(0);
    expect(r.log[0]).toBe('nc -z -w 5 postgresql 5432');
    const tool = 'temporal-sql-tool --plugin postgres12 --ep postgresql -p 5432 -u temporal';
    const schema = '/etc/temporal/schema/postgresql/v12';
    expect(r.log.slice(1)).toEqual([
      `${tool} --db temporal create`,
      `${tool} --db temporal setup-schema -v 0.0`,
      `${tool} --db temporal update-schema -d ${schema}/temporal/versioned`,
      `${tool} --db temporal_visibility create`,
      `${tool} --db temporal_visibility setup-schema -v 0.0`,
      `${tool} --db temporal_visibility update-schema -d ${schema}/visibility/versioned`,
    ]);
    expect(r.log.join('\n')).not.toMatch(/--pw|--password/); // the password goes through SQL_PASSWORD only
  });

  it('temporal-create-namespace waits for the server, creates the namespace and registers the attributes', () => {
    const r = runJob('temporal-create-namespace', { STUB_HEALTH_FAILURES: '2' });
    expect(r.status, r.stderr).toBe(0);
    const addr = '--address temporal:7233';
    expect(r.log.filter((l) => l.startsWith('temporal operator cluster health'))).toHaveLength(3);
    expect(r.log).toContain(`temporal operator namespace create ${addr} --namespace default --retention 168h`);
    const names = SEARCH_ATTRIBUTES.map((k) => k.name);
    const create = r.log.filter((l) => l.startsWith('temporal operator search-attribute create'));
    expect(create).toEqual([
      `temporal operator search-attribute create ${addr} --namespace default ${names.map((n) => `--name ${n} --type ${n === 'RenderOutcome' ? 'KeywordList' : 'Keyword'}`).join(' ')}`,
    ]);
    expect(r.log.some((l) => l.startsWith('temporal operator search-attribute list'))).toBe(true);
  });

  it('temporal-create-namespace is idempotent: an existing namespace is kept', () => {
    const r = runJob('temporal-create-namespace', {}, (dir) => fs.writeFileSync(path.join(dir, 'namespace'), ''));
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout).toContain("namespace 'default' already exists");
    expect(r.log.some((l) => l.startsWith('temporal operator namespace create'))).toBe(false);
  });

  it('temporal-create-namespace fails when the attributes never show up', () => {
    const r = runJob('temporal-create-namespace', { STUB_LOSE_ATTRIBUTES: '1', SETUP_MAX_ATTEMPTS: '3' });
    expect(r.status).not.toBe(0);
    expect(r.stderr).toContain('not listed yet');
  });
});
