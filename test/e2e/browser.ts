/**
 * A real headless Chromium (Debian's `chromium`) driven over the DevTools protocol with `ws`: no browser
 * download, no extra npm dependency. Just enough for page tests: navigate, evaluate, wait, screenshot, and
 * collect JavaScript exceptions and console errors (a CSP violation or a script error fails the test).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { WebSocket } from 'ws';

export const CHROMIUM_PATH = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

/** Why browser tests cannot run here, or undefined when they can. */
export const chromiumMissing: string | undefined = existsSync(CHROMIUM_PATH)
  ? undefined
  : `${CHROMIUM_PATH} not found: browser tests need Debian's chromium (apt-get install -y chromium)`;

const FLAGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--disable-dev-shm-usage',
  '--remote-debugging-port=0',
  '--window-size=1280,900',
];

interface CdpMessage {
  id?: number;
  method?: string;
  params?: Record<string, unknown>;
  result?: Record<string, unknown>;
  error?: { message: string };
  sessionId?: string;
}

export class Browser {
  private nextId = 1;
  private readonly pending = new Map<number, { resolve: (v: Record<string, unknown>) => void; reject: (e: Error) => void }>();
  private readonly listeners = new Set<(m: CdpMessage) => void>();

  private constructor(
    private readonly child: ChildProcess,
    private readonly ws: WebSocket,
    private readonly userDataDir: string,
  ) {
    ws.on('message', (data) => {
      const msg = JSON.parse((data as Buffer).toString()) as CdpMessage;
      if (msg.id !== undefined) {
        const p = this.pending.get(msg.id);
        this.pending.delete(msg.id);
        if (msg.error) p?.reject(new Error(msg.error.message));
        else p?.resolve(msg.result ?? {});
      } else {
        for (const l of this.listeners) l(msg);
      }
    });
  }

  static async launch(): Promise<Browser> {
    const userDataDir = mkdtempSync(path.join(os.tmpdir(), 'cd-chromium-'));
    // Its own process group: closing kills the helper processes (renderer, GPU, crashpad) too.
    const child = spawn(CHROMIUM_PATH, [...FLAGS, `--user-data-dir=${userDataDir}`, 'about:blank'], { stdio: ['ignore', 'ignore', 'pipe'], detached: true });
    // Never leave a browser behind, however the test process ends.
    const killGroup = (): void => {
      try {
        if (child.pid) process.kill(-child.pid, 'SIGKILL');
      } catch {
        // already gone
      }
    };
    process.once('exit', killGroup);
    child.once('exit', () => process.off('exit', killGroup));
    let stderr = '';
    const endpoint = await new Promise<string>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`chromium did not start:\n${stderr.slice(-2000)}`)), 20_000);
      child.stderr?.on('data', (b: Buffer) => {
        stderr += b.toString();
        const m = /DevTools listening on (ws:\/\/\S+)/.exec(stderr);
        if (m) {
          clearTimeout(timer);
          resolve(m[1]!);
        }
      });
      child.once('exit', (code) => {
        clearTimeout(timer);
        reject(new Error(`chromium exited with ${code}:\n${stderr.slice(-2000)}`));
      });
    });
    const ws = new WebSocket(endpoint, { perMessageDeflate: false });
    await new Promise<void>((resolve, reject) => {
      ws.once('open', () => resolve());
      ws.once('error', reject);
    });
    return new Browser(child, ws, userDataDir);
  }

  send(method: string, params: Record<string, unknown> = {}, sessionId?: string): Promise<Record<string, unknown>> {
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      this.ws.send(JSON.stringify({ id, method, params, ...(sessionId ? { sessionId } : {}) }));
    });
  }

  on(listener: (m: CdpMessage) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  async newPage(): Promise<Page> {
    const { targetId } = (await this.send('Target.createTarget', { url: 'about:blank' })) as { targetId: string };
    const { sessionId } = (await this.send('Target.attachToTarget', { targetId, flatten: true })) as { sessionId: string };
    const page = new Page(this, sessionId);
    await page.init();
    return page;
  }

  async close(): Promise<void> {
    await Promise.race([this.send('Browser.close').catch(() => undefined), new Promise((r) => setTimeout(r, 3_000))]);
    this.ws.close();
    if (this.child.exitCode === null && this.child.signalCode === null) {
      const exited = new Promise((r) => this.child.once('exit', r));
      this.child.kill('SIGKILL');
      await exited;
    }
    try {
      if (this.child.pid) process.kill(-this.child.pid, 'SIGKILL');
    } catch {
      // the group is already gone
    }
    try {
      rmSync(this.userDataDir, { recursive: true, force: true, maxRetries: 10, retryDelay: 100 });
    } catch {
      // A temp dir: a helper still flushing its profile is not worth failing a test for.
    }
  }
}

export class Page {
  /** Uncaught exceptions and console errors seen on this page. */
  readonly errors: string[] = [];
  private loaded: (() => void) | undefined;

  constructor(
    private readonly browser: Browser,
    private readonly sessionId: string,
  ) {
    browser.on((m) => {
      if (m.sessionId !== sessionId) return;
      if (m.method === 'Page.loadEventFired') this.loaded?.();
      if (m.method === 'Runtime.exceptionThrown') {
        const d = (m.params as { exceptionDetails?: { text?: string; exception?: { description?: string } } }).exceptionDetails;
        this.errors.push(`exception: ${d?.exception?.description ?? d?.text ?? 'unknown'}`);
      }
      if (m.method === 'Runtime.consoleAPICalled' && (m.params as { type?: string }).type === 'error') {
        this.errors.push(`console.error: ${JSON.stringify((m.params as { args?: unknown[] }).args)}`);
      }
      if (m.method === 'Log.entryAdded') {
        const e = (m.params as { entry: { level: string; text: string; url?: string } }).entry;
        if (e.level === 'error') this.errors.push(`log: ${e.text}${e.url ? ` (${e.url})` : ''}`);
      }
    });
  }

  private send(method: string, params: Record<string, unknown> = {}): Promise<Record<string, unknown>> {
    return this.browser.send(method, params, this.sessionId);
  }

  async init(): Promise<void> {
    await this.send('Page.enable');
    await this.send('Runtime.enable');
    await this.send('Log.enable');
    await this.send('Emulation.setDeviceMetricsOverride', { width: 1280, height: 900, deviceScaleFactor: 1, mobile: false });
  }

  /** Headers sent with every request of this page, its fetches included (e.g. an Authorization header). */
  async setExtraHeaders(headers: Record<string, string>): Promise<void> {
    await this.send('Network.enable');
    await this.send('Network.setExtraHTTPHeaders', { headers });
  }

  async goto(url: string, timeoutMs = 20_000): Promise<void> {
    const loaded = new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`page ${url} did not load in ${timeoutMs} ms`)), timeoutMs);
      this.loaded = () => {
        clearTimeout(timer);
        resolve();
      };
    });
    const res = (await this.send('Page.navigate', { url })) as { errorText?: string };
    if (res.errorText) throw new Error(`navigating to ${url}: ${res.errorText}`);
    await loaded;
  }

  /** Evaluates an expression in the page (promises awaited) and returns its JSON value. */
  async evaluate<T>(expression: string): Promise<T> {
    const res = (await this.send('Runtime.evaluate', { expression, returnByValue: true, awaitPromise: true })) as {
      result: { value?: T };
      exceptionDetails?: { text?: string; exception?: { description?: string } };
    };
    if (res.exceptionDetails) throw new Error(`evaluate failed: ${res.exceptionDetails.exception?.description ?? res.exceptionDetails.text}`);
    return res.result.value as T;
  }

  async waitFor(expression: string, timeoutMs = 15_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      if (await this.evaluate<boolean>(`Boolean(${expression})`)) return;
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${expression}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  async screenshot(file: string, fullPage = false): Promise<void> {
    const params: Record<string, unknown> = { format: 'png' };
    if (fullPage) {
      const { contentSize } = (await this.send('Page.getLayoutMetrics')) as { contentSize: { width: number; height: number } };
      params.clip = { x: 0, y: 0, width: 1280, height: Math.min(4_000, Math.ceil(contentSize.height)), scale: 1 };
      params.captureBeyondViewport = true;
    }
    const { data } = (await this.send('Page.captureScreenshot', params)) as { data: string };
    writeFileSync(file, Buffer.from(data, 'base64'));
  }
}
