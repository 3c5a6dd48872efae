/**
 * Renders belong to the API key that started them (its name is the render's owner: memo `owner` and search
 * attribute RenderOwner). What a caller may read or act on is decided here, once, for every route family and
 * the CLI: an operator (or a service without keys) sees every render, a client key only its own.
 */
import { RENDER_OWNER } from '../contracts/search-attributes.ts';

export type Viewer = { kind: 'all' } | { kind: 'owner'; owner: string };

/** Operators, the CLI, a service without keys. */
export const EVERYONE: Viewer = { kind: 'all' };

export function ownerViewer(owner: string): Viewer {
  return { kind: 'owner', owner };
}

/** Where a render's owner is read from: its memo, or its search attributes. */
export interface OwnedRender {
  memo?: Record<string, unknown> | undefined;
  typedSearchAttributes?: { get(key: typeof RENDER_OWNER): string | undefined };
}

export function ownerOf(r: OwnedRender): string | undefined {
  const fromMemo = r.memo?.owner;
  if (typeof fromMemo === 'string') return fromMemo;
  return r.typedSearchAttributes?.get(RENDER_OWNER);
}

/** The one read-side rule: may `viewer` see (read, cancel, replay) a render owned by `owner`? */
export function canSee(viewer: Viewer, owner: string | undefined): boolean {
  return viewer.kind === 'all' || owner === viewer.owner;
}

/** The owner a list is narrowed to for `viewer` (undefined: every render). */
export function listOwnerFilter(viewer: Viewer): string | undefined {
  return viewer.kind === 'all' ? undefined : viewer.owner;
}

/** Key names are a strict alphabet (auth/keys.ts); anything else is refused before it reaches a query. */
const SAFE_OWNER = /^[A-Za-z0-9._-]{1,64}$/;

/** ` AND RenderOwner = '<owner>'` for a list query narrowed to `owner`; '' for every render. */
export function ownerQueryClause(owner: string | undefined): string {
  if (owner === undefined) return '';
  if (!SAFE_OWNER.test(owner)) throw new Error(`unsafe owner name ${JSON.stringify(owner)}`);
  return ` AND ${RENDER_OWNER.name} = '${owner}'`;
}
