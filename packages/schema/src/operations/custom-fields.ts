import { z } from "zod";
import { defineOperation } from "../operation.js";
import { deleted, listOf, paginationQuery } from "../primitives.js";
import { customField, customFieldCreateBody, customFieldUpdateBody } from "../resources/custom-field.js";

const params = z.object({ custom_field_id: z.string() });

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
    errors: ["invalid_cursor"],
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
    errors: ["resource_already_exists"],
  }),
  update: defineOperation({
    id: "custom_fields.update",
    method: "patch",
    path: "/custom-fields/{custom_field_id}",
    tag: "Custom fields",
    summary: "Update a custom field",
    description:
      "Renames the field or sets the value of an `organization` field. The `key` and the `scope` never change (contacts hold their values under the key).",
    scope: "custom_fields:write",
    params,
    body: customFieldUpdateBody,
    bodyName: "CustomFieldUpdate",
    response: customField,
    responseName: "CustomField",
    status: 200,
    errors: [],
  }),
  delete: defineOperation({
    id: "custom_fields.delete",
    method: "delete",
    path: "/custom-fields/{custom_field_id}",
    tag: "Custom fields",
    summary: "Delete a custom field",
    description:
      "The field's value disappears from every contact that had one; each such contact emits `contact.updated`. The key is free again afterwards.",
    scope: "custom_fields:write",
    params,
    response: deleted("custom_field"),
    responseName: "DeletedCustomField",
    status: 200,
    errors: [],
  }),
};
