/** Loopback host names and addresses: the front's Host guard and the config's checks share this one test. */
export function isLoopbackHost(name: string): boolean {
  const n = name.toLowerCase();
  return n === 'localhost' || n.endsWith('.localhost') || n === '::1' || /^127(\.\d{1,3}){3}$/.test(n);
}

/**
 * A host name or IP address as the Host guard compares it: lower case, no port, no brackets, no trailing dot,
 * IPv6 in its canonical form (so `fe80::0001`, `[fe80::1]:7860` and `FE80::1` are one host). Undefined when
 * it is not a host at all (a path, a URL, spaces).
 */
export function normalizeHostName(value: string): string | undefined {
  const v = value.trim();
  if (v === '' || /[\s/?#@]/.test(v)) return undefined;
  // A bare IPv6 address (two colons or more, no brackets) is bracketed so the URL parser reads it as a host.
  const bare = !v.startsWith('[') && v.indexOf(':') !== v.lastIndexOf(':');
  try {
    const host = new URL(`http://${bare ? `[${v}]` : v}`).hostname;
    const name = host
      .replace(/^\[|\]$/g, '')
      .replace(/\.$/, '')
      .toLowerCase();
    return name === '' ? undefined : name;
  } catch {
    return undefined;
  }
}
