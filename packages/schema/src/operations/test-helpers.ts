import { z } from "zod";
import { defineOperation } from "../operation.js";
import { prefixedId } from "../primitives.js";
import { MAX_MESSAGE_TEXT, message, messageType } from "../resources/message.js";

export const testHelperOperations = {
  inboundMessage: defineOperation({
    id: "test_helpers.inbound_messages.create",
    method: "post",
    path: "/test-helpers/inbound-messages",
    tag: "Test helpers",
    summary: "Simulate a message from the contact",
    description:
      "Records a message from the conversation's contact exactly as a channel's inbound path does: it opens the contact's session window, reopens a closed conversation and emits `message.received`. Media needs an `attachment_id` from POST /uploads.",
    scope: "messages:write",
    testOnly: true,
    body: z.strictObject({
      conversation_id: prefixedId("conv"),
      type: messageType,
      text: z.string().min(1).max(MAX_MESSAGE_TEXT).optional(),
      attachment_id: prefixedId("att").optional(),
    }),
    bodyName: "InboundMessageCreate",
    response: message,
    responseName: "Message",
    status: 201,
    errors: ["resource_not_found", "attachment_not_found", "unsupported_message_type", "attachment_type_mismatch"],
  }),
};
