/** The production "setup step": register our search attributes on any Temporal server (idempotent). */
import type { Connection } from '@temporalio/client';
// @temporalio/proto is CommonJS: its namespace is only reachable through the default export under ESM.
import proto from '@temporalio/proto';

const { temporal } = proto;
import type { Logger } from '../log.ts';
import { SEARCH_ATTRIBUTES } from '../contracts/search-attributes.ts';

const IndexedValueType = temporal.api.enums.v1.IndexedValueType;

export async function ensureSearchAttributes(conn: Connection, namespace: string, logger: Logger): Promise<void> {
  const existing = await conn.operatorService.listSearchAttributes({ namespace });
  const known = new Set(Object.keys(existing.customAttributes ?? {}));
  const missing = SEARCH_ATTRIBUTES.filter((k) => !known.has(k.name));
  if (missing.length === 0) return;
  const searchAttributes: Record<string, (typeof IndexedValueType)[keyof typeof IndexedValueType]> = {};
  for (const key of missing) {
    searchAttributes[key.name] = key.type === 'KEYWORD_LIST' ? IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD_LIST : IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD;
  }
  await conn.operatorService.addSearchAttributes({ namespace, searchAttributes });
  logger.info({ added: missing.map((k) => k.name) }, 'registered search attributes');
}
