/**
 * API_TOKEN checks, shared by the front and the worker's metrics server (which must not import the front).
 */
import { presentedSecret, sameSecret } from './keys.ts';

export { sameSecret } from './keys.ts';

/**
 * `Bearer <token>`, or `Basic` whose password (or whole credential) is the token: Open WebUI and SillyTavern
 * can only send Basic auth, and A1111's own `--api-auth` is Basic.
 */
export function authorized(header: string | undefined, token: string): boolean {
  const secret = presentedSecret(header);
  return secret !== undefined && sameSecret(secret, token);
}
