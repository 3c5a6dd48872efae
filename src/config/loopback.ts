/** Loopback host names and addresses: the front's Host guard and the config's checks share this one test. */
export function isLoopbackHost(name: string): boolean {
  const n = name.toLowerCase();
  return n === 'localhost' || n.endsWith('.localhost') || n === '::1' || /^127(\.\d{1,3}){3}$/.test(n);
}
