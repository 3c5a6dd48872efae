/**
 * The one place configuration is read. Every variable is validated with zod at start-up; a bad value stops
 * the process with a message naming the variable, instead of failing later in some request.
 */
import { KeysConfigError, loadApiKeys } from '../auth/keys.ts';
import path from 'node:path';
import { z } from 'zod';
import { isLoopbackHost, normalizeHostName } from './loopback.ts';
import { checkTargetUrl, parseAllowList, type AllowList } from '../webhooks/allow-list.ts';
import { inRange, internalKind, parseIp } from '../webhooks/addresses.ts';
import { parseSecret } from '../webhooks/signature.ts';

const port = z.coerce.number().int().min(1).max(65535);
const positiveInt = z.coerce.number().int().positive();
const optionalString = z
  .string()
  .optional()
  .transform((v) => (v === undefined || v.trim() === '' ? undefined : v.trim()));
const bool = z.enum(['1', '0', 'true', 'false', 'yes', 'no', 'on', 'off']).transform((v) => ['1', 'true', 'yes', 'on'].includes(v));

const envSchema = z.object({
  HOST: z.string().min(1).default('127.0.0.1'),
  PORT: port.default(7860),
  DATA_DIR: z.string().min(1).default('./data'),
  /** One or more ComfyUI base URLs, comma separated: one backend (and one GPU slot) each. */
  COMFYUI_URL: z
    .string()
    .default('http://127.0.0.1:8188')
    .transform((v) =>
      v
        .split(',')
        .map((s) => s.trim())
        .filter(Boolean),
    )
    .pipe(z.array(z.url({ protocol: /^https?$/ })).min(1)),
  /**
   * Backend ids (`comfyui-<index in COMFYUI_URL>`) whose prompts this worker runs; default all; `none` runs no
   * prompts here (a front whose GPU worker runs elsewhere, e.g. in a model-swapping proxy's GPU entry). Lets one
   * worker per GPU box serve its own ComfyUI while every process shares the full COMFYUI_URL list.
   */
  GPU_BACKENDS: z
    .string()
    .optional()
    .transform((v) =>
      v === undefined || v.trim() === ''
        ? undefined
        : v
            .split(',')
            .map((s) => s.trim())
            .filter(Boolean),
    ),
  TEMPORAL_ADDRESS: optionalString,
  TEMPORAL_NAMESPACE: z.string().min(1).default('default'),
  TEMPORAL_TASK_QUEUE: z.string().min(1).default('renders'),
  TEMPORAL_CLI_PATH: optionalString,
  /** Ports of the embedded dev server (ignored when TEMPORAL_ADDRESS is set). */
  TEMPORAL_PORT: port.default(7233),
  /** The embedded UI's own loopback port, behind the front's /temporal/ (unset: a free one). */
  TEMPORAL_UI_PORT: port.optional(),
  /**
   * Serve the embedded dev server's Web UI at the front's /temporal/ (off by default, `start` mode only). The
   * UI has no login and no Host check of its own, so it listens on a loopback port and the front forwards to
   * it behind its Host allow-list and API_TOKEN (README, "Temporal Web UI").
   */
  TEMPORAL_UI: bool.default(false),
  /**
   * Base URL of the Temporal Web UI, for the gallery's links to each render (one behind its own login, in
   * production). Unset: no links, so the gallery never advertises an open UI.
   */
  TEMPORAL_UI_URL: optionalString.pipe(z.url({ protocol: /^https?$/ }).optional()),
  /**
   * The base URL clients reach this front at, for absolute links in answers (OpenAI `response_format: url`),
   * e.g. `http://box:8080/upstream/imagegen-flux-dev` behind a proxy that strips a path prefix. Unset: from
   * X-Forwarded-Proto/-Host/-Prefix, else the request's Host.
   */
  PUBLIC_URL: optionalString.pipe(z.url({ protocol: /^https?$/ }).optional()),
  DEFAULT_MODEL: z.string().min(1).default('imagegen-flux-dev'),
  /** Video model when a `/v1/videos` request names none. */
  DEFAULT_VIDEO_MODEL: z.string().min(1).default('videogen-wan22-5b'),
  /**
   * How long `POST /v1/videos/sync` waits before answering 504 (and cancelling the render). vLLM-Omni's
   * `VIDEO_SYNC_TIMEOUT_S`; its recipes set `VLLM_OMNI_VIDEO_SYNC_TIMEOUT` (1800 to 14400 s).
   */
  VIDEO_SYNC_TIMEOUT_S: positiveInt.default(3600),
  /** JSON file with per-model overrides (file names, defaults): operators change files without code. */
  MODELS_CONFIG: optionalString,
  /**
   * A folder of workflow files (`<name>.json`, an API-format graph, beside `<name>.manifest.json`), each served
   * as `POST /workflows/<name>`; default: the ones shipped in the repository's `workflows/`.
   */
  WORKFLOWS_DIR: optionalString,
  /**
   * Extra host names a loopback-bound front serves (comma separated), e.g. the name a reverse proxy such as a
   * model-swapping proxy forwards in Host. Loopback names are always served.
   */
  ALLOWED_HOSTS: z
    .string()
    .optional()
    .transform((v, ctx) => {
      const names = (v ?? '')
        .split(',')
        .map((s) => s.trim())
        .filter(Boolean);
      const bad = names.filter((n) => normalizeHostName(n) === undefined);
      if (bad.length > 0) {
        ctx.addIssue({ code: 'custom', message: `not a host name or IP address: ${bad.join(', ')}` });
        return z.NEVER;
      }
      return names.map((n) => normalizeHostName(n)!);
    }),
  /** Browser origins allowed cross-origin access (comma separated; `*` = any), like A1111's --cors-allow-origins. */
  CORS_ALLOW_ORIGINS: z
    .string()
    .optional()
    .transform((v) =>
      (v ?? '')
        .split(',')
        .map((s) => s.trim())
        .filter(Boolean),
    ),
  /** When set, every route but /health and /internal/ping needs `Authorization: Bearer <token>`. */
  API_TOKEN: optionalString,
  /** Named keys with roles, JSON `[{"name", "token", "role": "client"|"operator"}]` (src/auth/keys.ts). */
  API_KEYS: optionalString,
  /** A file holding API_KEYS' JSON (kept out of the environment and of process listings). */
  API_KEYS_FILE: optionalString,
  /**
   * Believe X-Forwarded-Proto / -Host / -Prefix for `url` answers: only behind a reverse proxy that sets them
   * itself. Off, a client cannot point another client's links elsewhere. PUBLIC_URL wins over both.
   */
  TRUST_FORWARDED_HEADERS: bool.default(false),
  MAX_IMAGE_BYTES: positiveInt.default(20 * 1024 * 1024),
  MAX_IMAGE_PIXELS: positiveInt.default(4096 * 4096),
  /**
   * Sharing the GPU with a model-swapping proxy (docs/llama-swap.md): the URL, through the proxy, of the GPU
   * entry's lease (`http://127.0.0.1:8080/upstream/<gpu entry>/gpu/lease`). When set, the front holds it open
   * while renders wait or run, so the proxy starts the GPU entry for them and queues other groups behind them.
   */
  GPU_LEASE_URL: optionalString.pipe(z.url({ protocol: /^https?$/ }).optional()),
  /** How often the front counts waiting renders for the lease (ms). */
  GPU_LEASE_POLL_MS: positiveInt.default(1_000),
  /** `Authorization` header value for the lease request, when the proxy has API keys (`Bearer <key>`). */
  GPU_LEASE_AUTHORIZATION: optionalString,
  /**
   * The secret the front and the GPU entry share for the lease (`X-GPU-Lease-Token`). The lease is reachable by
   * anyone who reaches the proxy, and whoever holds it keeps the GPU from every other group: required with
   * GPU_LEASE_URL and in `gpu` mode. Its own header, so the proxy's API key can still use `Authorization`.
   */
  GPU_LEASE_TOKEN: optionalString,
  /**
   * GPU entry: how long leases may keep the GPU while another group may be waiting (ms). At the end of a slice no new
   * prompt starts, the running one ends, and every lease is ended at once and asked again: a request for another
   * group queued in the proxy meanwhile gets the GPU first. An LLM request so waits at most the slice plus the
   * running prompt (docs/llama-swap.md, "How long each side waits").
   */
  GPU_LEASE_SLICE_MS: positiveInt.default(30_000),
  /**
   * GPU workers: prompt attempts a worker takes from the shared GPU queue beyond one per ComfyUI, to choose among
   * (backends/gpu-pool.ts): a ComfyUI that frees up takes one for the model it has loaded first. 0 keeps Temporal's
   * first-in-first-out order. Attempts held here cannot go to another worker meanwhile: with several GPU workers
   * keep it small; behind llama-swap (one GPU worker) the guide sets 16.
   */
  GPU_DISPATCH_LOOKAHEAD: z.coerce.number().int().nonnegative().default(0),
  /** How long a waiting attempt may be passed over for ones of the loaded model (ms), with a lookahead. */
  GPU_MAX_PASS_OVER_MS: z.coerce.number().int().nonnegative().default(120_000),
  /** Most images per request (batch_size × n_iter). Open WebUI sends up to n=10. */
  MAX_BATCH: positiveInt.default(16),
  /** Pixel budget of one output image (after hires fix); unset: each model's own (1536² for the image models). */
  MAX_RENDER_PIXELS: z.coerce.number().int().positive().optional(),
  MAX_EXTRA_IMAGES: positiveInt.default(3),
  /** Largest body of any route (image routes: their images' base64, 4/3 of MAX_IMAGE_BYTES each, up to this). */
  BODY_LIMIT_BYTES: positiveInt.default(100 * 1024 * 1024),
  /** Largest body of a route that takes no images (txt2img without extra_images still fits: api/body-limits.ts). */
  JSON_BODY_LIMIT_BYTES: positiveInt.default(1024 * 1024),
  /** Bodies this large or larger are read and decoded at most MAX_CONCURRENT_LARGE_BODIES at a time. */
  LARGE_BODY_BYTES: positiveInt.default(256 * 1024),
  MAX_CONCURRENT_LARGE_BODIES: positiveInt.default(4),
  /**
   * A large body slower than this (bytes per second, averaged after 5 s) loses its slot: 408, connection
   * closed. 0 turns the minimum off.
   */
  MIN_UPLOAD_BYTES_PER_S: z.coerce
    .number()
    .int()
    .nonnegative()
    .default(16 * 1024),
  /**
   * Longest time to receive one request's headers and body (408 after): bounds slow-trickle bodies. Renders
   * may take any time after that; this is not a response timeout.
   */
  REQUEST_TIMEOUT_MS: positiveInt.default(120_000),
  /**
   * A connection's request headers must arrive within this (408 after): a socket that connects and sends
   * nothing is closed after it, not after a minute or more. At most REQUEST_TIMEOUT_MS.
   */
  HTTP_HEADERS_TIMEOUT_MS: positiveInt.default(10_000),
  /** A kept-alive connection idle this long between requests is closed (as common servers do, about 5 s). */
  HTTP_KEEP_ALIVE_TIMEOUT_MS: positiveInt.default(5_000),
  /** Most open connections to the HTTP front; more are refused at accept. Each waiting render holds one. */
  HTTP_MAX_CONNECTIONS: positiveInt.default(1_024),
  /**
   * Admission control: most renders waiting or running (all fronts, counted by Temporal). Past it a new
   * render is refused with 503 and Retry-After, and nothing is started.
   */
  MAX_WAITING_RENDERS: positiveInt.default(500),
  /**
   * One client's share of MAX_WAITING_RENDERS (a key, else a remote address; loopback addresses, a local
   * reverse proxy's, are not counted apart): past it that client's new render is refused with 429 and
   * Retry-After. Default a quarter of MAX_WAITING_RENDERS (at least 1).
   */
  MAX_WAITING_RENDERS_PER_CLIENT: positiveInt.optional(),
  /**
   * How long finished renders are kept: what the retention schedule prunes (renders, and blobs nothing
   * newer references), and the embedded Temporal's namespace retention (at least a day; in production set it
   * on the namespace: docs/operators.md "Retention"). Days, fractions allowed (0.5 = 12 h).
   */
  RENDER_RETENTION_DAYS: z.coerce.number().positive().default(7),
  /**
   * How often the retention schedule (`comfy-durable-retention`, created by the workers) prunes: a duration
   * such as `6h`, `30m`, `1d` (at least a minute), or `off` (no automatic prune; an existing schedule is deleted).
   */
  RENDER_PRUNE_INTERVAL: z
    .string()
    .default('6h')
    .transform((v, ctx) => {
      const t = v.trim().toLowerCase();
      if (t === 'off' || t === '0' || t === 'false' || t === 'no') return undefined;
      const m = /^(\d+)\s*(m|min|h|d)$/.exec(t);
      const ms = m ? Number(m[1]) * { m: 60_000, min: 60_000, h: 3_600_000, d: 86_400_000 }[m[2] as 'm' | 'min' | 'h' | 'd'] : 0;
      if (!m || ms < 60_000) {
        ctx.addIssue({ code: 'custom', message: 'expected a duration of at least a minute (30m, 6h, 1d) or off' });
        return z.NEVER;
      }
      return ms;
    }),
  /**
   * ComfyUI's input and output folders, when ComfyUI runs on this machine (off by default). ComfyUI has no
   * API to delete files: with these set, collected outputs are deleted from the output folder and
   * `renders prune` deletes old uploaded inputs from the input folder.
   */
  COMFYUI_INPUT_DIR: optionalString,
  COMFYUI_OUTPUT_DIR: optionalString,
  /** Heartbeat timeout of the prompt-following activity: how fast a dead worker is noticed. */
  HEARTBEAT_TIMEOUT_MS: positiveInt.default(30_000),
  /** Overrides every profile's stall timeout (tests and operators with slow disks). */
  STALL_TIMEOUT_MS: z.coerce.number().int().positive().optional(),
  /** Polling interval used only while the WebSocket is down or silent. */
  POLL_INTERVAL_MS: positiveInt.default(1_000),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  /** Cancel the render when a synchronous client disconnects (default: keep rendering). */
  CANCEL_ON_DISCONNECT: bool.default(false),
  /**
   * `worker` mode only: serve the worker's Prometheus metrics (prompt attempts, stalls, escalations) on this
   * port at `/metrics`. The front serves its own; in `start` mode both share the front's `/metrics`.
   */
  METRICS_PORT: port.optional(),
  /** Where the worker's metrics listen (not HOST: a worker has no front). Loopback unless asked. */
  METRICS_HOST: z.string().min(1).default('127.0.0.1'),
  /**
   * On SIGTERM, how long a running prompt may finish before the worker hands it back to Temporal (the next
   * attempt re-attaches to the prompt, which keeps running in ComfyUI).
   */
  SHUTDOWN_GRACE_MS: z.coerce.number().int().nonnegative().default(10_000),
  /**
   * Collect workflow stack traces (Temporal UI's "Stack Trace" tab) in `start`'s worker thread. Off by default:
   * the SDK's promise hook for them runs for every promise of that thread (src/worker/workflow-stack-traces.ts).
   */
  WORKFLOW_STACK_TRACES: bool.default(false),
  /**
   * `start` mode: the front pings its worker thread; one that does not answer within this (a busy loop, a
   * deadlock) makes /health and /ready fail, and one silent for 3× this is terminated and started again.
   */
  WORKER_THREAD_PING_TIMEOUT_MS: positiveInt.default(10_000),
  /**
   * Where blobs (inputs, outputs) live: `fs` = DATA_DIR/blobs (one host, or a shared volume); `s3` = an
   * S3-compatible bucket, so workers and fronts on different hosts share them. Credentials for `s3` come from the
   * AWS SDK's default chain (AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY, AWS_PROFILE, instance roles).
   */
  BLOB_STORE: z.enum(['fs', 's3']).default('fs'),
  S3_BUCKET: optionalString,
  /** Key prefix inside the bucket, e.g. `comfy-durable/`. */
  S3_PREFIX: optionalString,
  /** Endpoint of a non-AWS S3-compatible server (versitygw, MinIO, Ceph RGW); unset = AWS. */
  S3_ENDPOINT: optionalString.pipe(z.url({ protocol: /^https?$/ }).optional()),
  S3_REGION: z.string().min(1).default('us-east-1'),
  /** Path-style URLs (`endpoint/bucket/key`); default on when S3_ENDPOINT is set, as most such servers need. */
  S3_FORCE_PATH_STYLE: bool.optional(),
  /**
   * OpenTelemetry tracing, off unless an OTLP endpoint is set (the standard variables): spans from the HTTP
   * request through Temporal to the ComfyUI prompt go to `<endpoint>/v1/traces` (OTLP over HTTP, protobuf),
   * or to the traces endpoint as given. OTEL_EXPORTER_OTLP_HEADERS is read by the exporter itself.
   */
  OTEL_EXPORTER_OTLP_ENDPOINT: optionalString.pipe(z.url({ protocol: /^https?$/ }).optional()),
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: optionalString.pipe(z.url({ protocol: /^https?$/ }).optional()),
  OTEL_SERVICE_NAME: z.string().min(1).default('comfy-durable'),
  /**
   * Webhooks (docs/webhooks.md): where the event of async work goes when the request names no URL of its own
   * (the video API's POST /v1/videos, ComfyUI prompts, async workflow files). Unset: only per-request URLs.
   */
  WEBHOOK_URL: optionalString.pipe(z.url({ protocol: /^https?$/ }).optional()),
  /**
   * The Standard Webhooks signing secret, `whsec_` + base64 of 24 to 64 bytes; several (space or comma
   * separated) during a rotation: each signs every message. Required with WEBHOOK_URL or WEBHOOK_ALLOWED_TARGETS.
   */
  WEBHOOK_SECRET: z
    .string()
    .optional()
    .transform((v, ctx) => {
      const secrets = (v ?? '').split(/[\s,]+/).filter(Boolean);
      for (const s of secrets) {
        try {
          parseSecret(s);
        } catch (err) {
          ctx.addIssue({ code: 'custom', message: (err as Error).message });
          return z.NEVER;
        }
      }
      return secrets;
    }),
  /**
   * Where per-request webhook URLs may point (comma separated): host names, `*.domain`, IP addresses, CIDR
   * ranges, or `*` (any host that resolves to public addresses only). Internal addresses (loopback, private,
   * link-local such as 169.254.169.254, …) are refused unless an address or range here lists them. Unset: no
   * per-request URLs (no open relay); the host of WEBHOOK_URL is always allowed.
   */
  WEBHOOK_ALLOWED_TARGETS: z
    .string()
    .optional()
    .transform((v, ctx): AllowList => {
      try {
        return parseAllowList((v ?? '').split(','));
      } catch (err) {
        ctx.addIssue({ code: 'custom', message: (err as Error).message });
        return z.NEVER;
      }
    }),
  /** One delivery try: resolve, connect, send and get the answer's status within this. */
  WEBHOOK_TIMEOUT_MS: positiveInt.max(120_000).default(10_000),
  /** Tries per event, the first included; then the delivery is given up (and says so to operators). */
  WEBHOOK_MAX_ATTEMPTS: positiveInt.max(100).default(12),
  /** Delay before the second try, doubled for each further one up to WEBHOOK_RETRY_MAX_MS. */
  WEBHOOK_RETRY_INITIAL_MS: positiveInt.default(5_000),
  WEBHOOK_RETRY_MAX_MS: positiveInt.default(3_600_000),
  /** Deliveries one worker runs at once (the webhook task queue's slots: never a GPU slot). */
  WEBHOOK_MAX_CONCURRENT: positiveInt.max(256).default(8),
});

export type Env = z.infer<typeof envSchema>;

export interface Config extends Env {
  dataDir: string;
  blobDir: string;
  temporalDbFile: string;
}

export class ConfigError extends Error {
  override name = 'ConfigError';
}

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const parsed = envSchema.safeParse(env);
  if (!parsed.success) {
    const lines = parsed.error.issues.map((i) => `  ${i.path.join('.') || '(env)'}: ${i.message}`);
    throw new ConfigError(`invalid configuration:\n${lines.join('\n')}`);
  }
  if (parsed.data.BLOB_STORE === 's3' && !parsed.data.S3_BUCKET) {
    throw new ConfigError('invalid configuration:\n  S3_BUCKET: required when BLOB_STORE=s3');
  }
  // The embedded UI is served by the front: on a front that other machines reach, only behind the token.
  if (parsed.data.TEMPORAL_UI && !parsed.data.TEMPORAL_ADDRESS && !parsed.data.API_TOKEN && !isLoopbackHost(parsed.data.HOST)) {
    throw new ConfigError(
      `invalid configuration:\n  TEMPORAL_UI: the Temporal UI would be served at /temporal/ on HOST=${parsed.data.HOST} without a login; set API_TOKEN, or keep HOST on loopback`,
    );
  }
  if (parsed.data.GPU_LEASE_URL && !parsed.data.GPU_LEASE_TOKEN) {
    throw new ConfigError("invalid configuration:\n  GPU_LEASE_TOKEN: required with GPU_LEASE_URL (the same secret as the GPU entry's)");
  }
  try {
    // Checked at start-up, not at the first request: a typo in a key file must not leave the service open or shut.
    loadApiKeys(parsed.data);
  } catch (err) {
    if (err instanceof KeysConfigError) throw new ConfigError(`invalid configuration:\n  ${err.message}`);
    throw err;
  }
  const webhookAllowList = withDefaultTarget(parsed.data);
  const dataDir = path.resolve(parsed.data.DATA_DIR);
  return {
    ...parsed.data,
    WEBHOOK_ALLOWED_TARGETS: webhookAllowList,
    dataDir,
    blobDir: path.join(dataDir, 'blobs'),
    temporalDbFile: path.join(dataDir, 'temporal.db'),
  };
}

/**
 * The webhook allow-list with WEBHOOK_URL's host in it (the operator chose that one), once the settings agree:
 * a secret to sign with, and a default that is no internal address unless the list names it.
 */
function withDefaultTarget(env: Env): AllowList {
  const list = env.WEBHOOK_ALLOWED_TARGETS;
  const used = env.WEBHOOK_URL !== undefined || list.entries.length > 0;
  if (used && env.WEBHOOK_SECRET.length === 0) {
    throw new ConfigError(
      'invalid configuration:\n  WEBHOOK_SECRET: required with WEBHOOK_URL or WEBHOOK_ALLOWED_TARGETS (whsec_ + base64 of 24 to 64 random bytes)',
    );
  }
  if (env.WEBHOOK_RETRY_MAX_MS < env.WEBHOOK_RETRY_INITIAL_MS) {
    throw new ConfigError('invalid configuration:\n  WEBHOOK_RETRY_MAX_MS: must be at least WEBHOOK_RETRY_INITIAL_MS');
  }
  if (!env.WEBHOOK_URL) return list;
  const host = new URL(env.WEBHOOK_URL).hostname.replace(/^\[|\]$/g, '').replace(/\.$/, '');
  const ip = parseIp(host);
  if (ip && internalKind(ip) && !list.ranges.some((r) => inRange(ip, r))) {
    throw new ConfigError(
      `invalid configuration:\n  WEBHOOK_URL: ${host} is a ${internalKind(ip)} address; list it in WEBHOOK_ALLOWED_TARGETS to deliver there`,
    );
  }
  const withDefault: AllowList = ip
    ? { ...list, ranges: [...list.ranges, { ...ip, prefix: ip.family === 4 ? 32 : 128 }] }
    : { ...list, hosts: [...list.hosts, host.toLowerCase()] };
  const verdict = checkTargetUrl(env.WEBHOOK_URL, withDefault);
  if (!verdict.ok) throw new ConfigError(`invalid configuration:\n  WEBHOOK_URL: ${verdict.reason}`);
  return withDefault;
}
