import type { Operation } from "./operation.js";
import { contactOperations } from "./operations/contacts.js";
import { customFieldOperations } from "./operations/custom-fields.js";
import { tagOperations } from "./operations/tags.js";

/** Every operation of the API, by resource. Routes, OpenAPI, docs and the SDK come from here. */
export const api = {
  contacts: contactOperations,
  tags: tagOperations,
  customFields: customFieldOperations,
};

export const operations: Operation[] = Object.values(api).flatMap((group) => Object.values(group));
