import { z } from "zod";
import { defineOperation } from "../operation.js";
import { listOf, paginationQuery } from "../primitives.js";
import { customField, customFieldCreateBody } from "../resources/custom-field.js";

export const customFieldOperations = {
  list: defineOperation({
    id: "custom_fields.list",
    method: "get",
    path: "/custom-fields",
    tag: "Custom fields",
    summary: "List custom fields",
    scope: "custom_fields:read",
    query: z.strictObject({ ...paginationQuery }),
    response: listOf(customField),
    responseName: "CustomFieldList",
    status: 200,
    errors: ["validation_error", "invalid_cursor"],
  }),
  create: defineOperation({
    id: "custom_fields.create",
    method: "post",
    path: "/custom-fields",
    tag: "Custom fields",
    summary: "Create a custom field",
    description:
      "The `key` is generated from the name unless given (lower-case, words joined by `_`), is immutable, and is unique within the environment.",
    scope: "custom_fields:write",
    body: customFieldCreateBody,
    bodyName: "CustomFieldCreate",
    response: customField,
    responseName: "CustomField",
    status: 201,
    errors: ["invalid_json", "validation_error", "resource_already_exists"],
  }),
};
