import { z } from "zod";

export const scopes = [
  "contacts:read",
  "contacts:write",
  "conversations:read",
  "conversations:write",
  "messages:read",
  "messages:write",
  "notes:read",
  "notes:write",
  "tags:read",
  "tags:write",
  "channels:read",
  "users:read",
  "teams:read",
  "teams:write",
  "custom_fields:read",
  "custom_fields:write",
  "webhooks:read",
  "webhooks:write",
] as const;

export type Scope = (typeof scopes)[number];
export const scopeSchema = z.enum(scopes);
