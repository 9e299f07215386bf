import { z } from "zod";
import { defineOperation } from "../operation.js";
import { environment } from "../primitives.js";
import { scopeSchema } from "../scopes.js";

export const apiKey = z.object({
  object: z.literal("api_key"),
  id: z.string(),
  environment,
  scopes: z.array(scopeSchema),
  redacted_key: z.string().describe("`parley_<env>_****` and the last 4 characters; never the key"),
  organization: z.object({ object: z.literal("organization"), id: z.string(), name: z.string() }),
});

export const apiKeyOperations = {
  current: defineOperation({
    id: "api_keys.current",
    method: "get",
    path: "/api-keys/current",
    tag: "API keys",
    summary: "Describe the calling key",
    description: "Its organization, environment and scopes; never the key itself. `parley whoami` shows it.",
    scope: null,
    response: apiKey,
    responseName: "ApiKey",
    status: 200,
    errors: [],
  }),
};
