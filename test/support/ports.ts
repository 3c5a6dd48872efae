import net from 'node:net';

/** The OS hands out ephemeral ports from 32768 (Linux's default `ip_local_port_range`). */
const BELOW_EPHEMERAL = { from: 20_000, to: 32_767 } as const;

function bindable(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const srv = net.createServer();
    srv.unref();
    srv.once('error', () => resolve(false));
    srv.listen(port, '127.0.0.1', () => srv.close(() => resolve(true)));
  });
}

/**
 * A free port below the ephemeral range. Tests start servers on these ports and often stop and restart them
 * (llama-swap's entries, a killed worker, a restarted ComfyUI): an ephemeral port would be free for any outgoing
 * connection on the machine while its server is down, and the restart would fail with EADDRINUSE (a CI run saw
 * llama-swap answer 502 for an LLM that could not listen again). Outgoing connections never take these.
 */
export async function freePort(): Promise<number> {
  const span = BELOW_EPHEMERAL.to - BELOW_EPHEMERAL.from;
  for (let i = 0; i < 200; i++) {
    const port = BELOW_EPHEMERAL.from + Math.floor(Math.random() * span);
    if (await bindable(port)) return port;
  }
  throw new Error(`no free port in ${BELOW_EPHEMERAL.from}-${BELOW_EPHEMERAL.to}`);
}

/**
 * A free port below 32768, for servers that store ports as a signed 16-bit number (Temporal's cluster
 * membership table uses `smallint`). Every port freePort gives is one.
 */
export const freeLowPort = freePort;
