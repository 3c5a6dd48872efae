/** Linux /proc readers: RSS and CPU time of a process, and its descendants (tsx runs the service in a child node). */
import { readdirSync, readFileSync } from 'node:fs';

const CLK_TCK = 100; // getconf CLK_TCK on Linux x86_64/arm64

function read(file: string): string | undefined {
  try {
    return readFileSync(file, 'utf8');
  } catch {
    return undefined;
  }
}

/** Direct children of `pid`, from every thread's `children` list. */
export function childrenOf(pid: number): number[] {
  const out = new Set<number>();
  let tasks: string[];
  try {
    tasks = readdirSync(`/proc/${pid}/task`);
  } catch {
    return [];
  }
  for (const t of tasks) {
    const txt = read(`/proc/${pid}/task/${t}/children`);
    for (const s of (txt ?? '').trim().split(/\s+/)) if (s) out.add(Number(s));
  }
  return [...out];
}

export function descendantsOf(pid: number): number[] {
  const all: number[] = [];
  const stack = [pid];
  while (stack.length > 0 && all.length < 1000) {
    const p = stack.pop()!;
    for (const c of childrenOf(p)) {
      all.push(c);
      stack.push(c);
    }
  }
  return all;
}

export function cmdline(pid: number): string {
  return (read(`/proc/${pid}/cmdline`) ?? '').split('\0').join(' ').trim();
}

/** VmRSS in bytes (0 when the process is gone). */
export function rssBytes(pid: number): number {
  const m = /VmRSS:\s+(\d+)\s+kB/.exec(read(`/proc/${pid}/status`) ?? '');
  return m ? Number(m[1]) * 1024 : 0;
}

/** VmHWM (peak RSS as the kernel saw it) in bytes. */
export function hwmBytes(pid: number): number {
  const m = /VmHWM:\s+(\d+)\s+kB/.exec(read(`/proc/${pid}/status`) ?? '');
  return m ? Number(m[1]) * 1024 : 0;
}

/** utime + stime in ms. */
export function cpuMs(pid: number): number {
  const stat = read(`/proc/${pid}/stat`);
  if (!stat) return 0;
  // Fields after the `(comm)` part; utime and stime are fields 14 and 15 (1-based).
  const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const utime = Number(rest[11]);
  const stime = Number(rest[12]);
  return ((utime + stime) * 1000) / CLK_TCK;
}

/**
 * The node process actually running the service: `test/support/service.ts` spawns `node tsx/cli.mjs`,
 * which spawns `node --require preflight --import loader main.ts` and relays signals to it.
 */
export function serviceNodePid(wrapperPid: number): number {
  if (/src\/cli\/main\.ts|dist\/cli\/main\.js/.test(cmdline(wrapperPid))) return wrapperPid;
  // Not `start`'s worker process, a child of the front running the same script.
  const kids = descendantsOf(wrapperPid).filter((p) => cmdline(p).includes('src/cli/main.ts') && !cmdline(p).includes('--supervised'));
  return kids[0] ?? wrapperPid;
}

/** The short name of a process (`node`, `temporal`, …), '' when it is gone. */
export function commOf(pid: number): string {
  return (read(`/proc/${pid}/comm`) ?? '').trim();
}

/**
 * Every node process of a service: the process itself and each node descendant (a `start` front's worker
 * process when it has one, a workflow bundler while it runs). What the memory budget counts: a service's
 * figure must not depend on how it splits itself into processes. The embedded Temporal server (Go) is not
 * a node process; the benches run their own and pass TEMPORAL_ADDRESS.
 */
export function serviceNodePids(pid: number): number[] {
  return [pid, ...descendantsOf(pid).filter((p) => commOf(p) === 'node')];
}

/** RSS of a service: all its node processes summed (serviceNodePids). */
export function serviceRssBytes(pid: number): number {
  return serviceNodePids(pid).reduce((a, p) => a + rssBytes(p), 0);
}

/** CPU time of a service: all its node processes summed (serviceNodePids). */
export function serviceCpuMs(pid: number): number {
  return serviceNodePids(pid).reduce((a, p) => a + cpuMs(p), 0);
}

export function processTreeCpuMs(pid: number): number {
  return [pid, ...descendantsOf(pid)].reduce((a, p) => a + cpuMs(p), 0);
}
