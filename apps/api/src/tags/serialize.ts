import { apiTimestamp } from "@parley/core";
import type { Tag } from "@parley/schema";
import type { TagRow } from "./queries.js";

export function serializeTag(row: TagRow): Tag {
  return {
    object: "tag",
    id: row.id,
    name: row.name,
    color: row.color,
    created_at: apiTimestamp(row.createdAt),
    updated_at: apiTimestamp(row.updatedAt),
  };
}
