import { createHmac, timingSafeEqual } from "node:crypto";
import { valueUnknownToPlanner } from "@parley/db";
import { type SQL, sql } from "drizzle-orm";
import type { PgColumn } from "drizzle-orm/pg-core";
import { ApiError } from "./api-error.js";

export interface KeysetPosition {
  createdAt: Date;
  id: string;
}

const MAX_CURSOR_LENGTH = 80;
const SIGNATURE_BYTES = 12;

function invalidCursor(): ApiError {
  return new ApiError("invalid_cursor", "The `after` cursor was not issued for this list.", { param: "after" });
}

/**
 * Opaque, signed keyset cursors. The signature covers the list they came from, so a
 * cursor of another list, organization or environment is refused, never a silent first page.
 */
export class CursorCodec {
  constructor(private readonly secret: string) {}

  encode(listKey: string, position: KeysetPosition): string {
    const payload = Buffer.from(`${position.createdAt.getTime().toString(36)}~${position.id}`).toString("base64url");
    return `${payload}.${this.sign(listKey, payload)}`;
  }

  decode(listKey: string, cursor: string | undefined): KeysetPosition | undefined {
    if (cursor === undefined) return undefined;
    if (cursor.length > MAX_CURSOR_LENGTH) throw invalidCursor();
    const [payload, signature, extra] = cursor.split(".");
    if (!payload || !signature || extra !== undefined) throw invalidCursor();
    const expected = Buffer.from(this.sign(listKey, payload));
    const given = Buffer.from(signature);
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) throw invalidCursor();
    const [time, id] = Buffer.from(payload, "base64url").toString("utf8").split("~");
    const createdAt = new Date(Number.parseInt(time ?? "", 36));
    if (!id || Number.isNaN(createdAt.getTime())) throw invalidCursor();
    return { createdAt, id };
  }

  private sign(listKey: string, payload: string): string {
    return createHmac("sha256", this.secret)
      .update(`${listKey}\n${payload}`)
      .digest()
      .subarray(0, SIGNATURE_BYTES)
      .toString("base64url");
  }
}

/** The list's identity for the cursor: operation, caller's organization and environment, parent resource. */
export function listKeyOf(operationId: string, tenant: { organizationId: string; environment: string }, parentId = "") {
  return `${operationId}|${tenant.organizationId}|${tenant.environment}|${parentId}`;
}

/** Newest first: rows strictly after the cursor in (created_at desc, id desc) order. */
export function afterPosition(
  columns: { createdAt: PgColumn; id: PgColumn },
  position: KeysetPosition | undefined,
): SQL | undefined {
  if (!position) return undefined;
  return sql`(${columns.createdAt}, ${columns.id}) < (${position.createdAt.toISOString()}::timestamptz, ${position.id})`;
}

/** `afterPosition` for a `reusableQuery`: the position comes from placeholders `afterCreatedAt` (ISO) and `afterId`. */
export function afterPlaceholderPosition(columns: { createdAt: PgColumn; id: PgColumn }): SQL {
  const createdAt = valueUnknownToPlanner(sql.placeholder("afterCreatedAt"), "timestamptz");
  const id = valueUnknownToPlanner(sql.placeholder("afterId"), "text");
  return sql`(${columns.createdAt}, ${columns.id}) < (${createdAt}, ${id})`;
}

export interface Page<T> {
  object: "list";
  data: T[];
  pagination: { has_more: boolean; next_cursor: string | null };
}

/** Rows were fetched with `limit + 1`: the extra row only tells that there is more. */
export function toPage<Row extends KeysetPosition, T>(
  rows: Row[],
  limit: number,
  cursor: { codec: CursorCodec; listKey: string },
  serialize: (rows: Row[]) => T[],
): Page<T> {
  const hasMore = rows.length > limit;
  const pageRows = hasMore ? rows.slice(0, limit) : rows;
  const last = pageRows[pageRows.length - 1];
  return {
    object: "list",
    data: serialize(pageRows),
    pagination: {
      has_more: hasMore,
      next_cursor: hasMore && last ? cursor.codec.encode(cursor.listKey, last) : null,
    },
  };
}
