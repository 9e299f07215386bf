import { z } from "zod";
import { defineOperation } from "../operation.js";
import { deleted, listOf, paginationQuery } from "../primitives.js";
import { tag, tagCreateBody, tagUpdateBody } from "../resources/tag.js";

const params = z.object({ tag_id: z.string() });

export const tagOperations = {
  list: defineOperation({
    id: "tags.list",
    method: "get",
    path: "/tags",
    tag: "Tags",
    summary: "List tags",
    scope: "tags:read",
    query: z.strictObject({ ...paginationQuery }),
    response: listOf(tag),
    responseName: "TagList",
    status: 200,
    errors: ["invalid_cursor"],
  }),
  create: defineOperation({
    id: "tags.create",
    method: "post",
    path: "/tags",
    tag: "Tags",
    summary: "Create a tag",
    scope: "tags:write",
    body: tagCreateBody,
    bodyName: "TagCreate",
    response: tag,
    responseName: "Tag",
    status: 201,
    errors: ["resource_already_exists"],
  }),
  update: defineOperation({
    id: "tags.update",
    method: "patch",
    path: "/tags/{tag_id}",
    tag: "Tags",
    summary: "Update a tag",
    scope: "tags:write",
    params,
    body: tagUpdateBody,
    bodyName: "TagUpdate",
    response: tag,
    responseName: "Tag",
    status: 200,
    errors: ["resource_already_exists"],
  }),
  delete: defineOperation({
    id: "tags.delete",
    method: "delete",
    path: "/tags/{tag_id}",
    tag: "Tags",
    summary: "Delete a tag",
    description: "The tag disappears from every contact that had it; each such contact emits `tag.removed`.",
    scope: "tags:write",
    params,
    response: deleted("tag"),
    responseName: "DeletedTag",
    status: 200,
    errors: [],
  }),
};
