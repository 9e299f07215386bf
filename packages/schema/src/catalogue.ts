import type { Operation } from "./operation.js";
import { apiKeyOperations } from "./operations/api-keys.js";
import { channelOperations } from "./operations/channels.js";
import { contactOperations } from "./operations/contacts.js";
import { conversationOperations, noteOperations } from "./operations/conversations.js";
import { customFieldOperations } from "./operations/custom-fields.js";
import { attachmentOperations, messageOperations } from "./operations/messages.js";
import { tagOperations } from "./operations/tags.js";
import { teamOperations, userOperations } from "./operations/teams.js";
import { testHelperOperations } from "./operations/test-helpers.js";
import { eventOperations, webhookOperations } from "./operations/webhooks.js";

/** Every operation of the API, by resource. Routes, OpenAPI, docs and the SDK come from here. */
export const api = {
  contacts: contactOperations,
  conversations: conversationOperations,
  notes: noteOperations,
  messages: messageOperations,
  attachments: attachmentOperations,
  channels: channelOperations,
  users: userOperations,
  teams: teamOperations,
  tags: tagOperations,
  customFields: customFieldOperations,
  webhooks: webhookOperations,
  events: eventOperations,
  testHelpers: testHelperOperations,
  apiKeys: apiKeyOperations,
};

export const operations: Operation[] = Object.values(api).flatMap((group) => Object.values(group));
