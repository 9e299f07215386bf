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
      "Records a message from the conversation's contact exactly as a channel's inbound path does: it opens the contact's session window, reopens a closed conversation and emits `message.received`. Media needs an `attachment_id` from POST /uploads. On an `sms` channel, instead of `conversation_id`, `channel_id` and `from` (a phone number) simulate a text from that number as a provider would bring it: the contact is found by the number however its `phone` was typed (or created), and its conversation on the channel (or a new one). On an `sms` channel a `STOP` (or another stop word) opts the contact out on the channel, and a `START` or `UNSTOP` opts them back in.",
    scope: "messages:write",
    testOnly: true,
    body: z.strictObject({
      conversation_id: prefixedId("conv")
        .optional()
        .describe("The conversation the contact writes in; required unless `channel_id` and `from` are given"),
      channel_id: prefixedId("chn")
        .optional()
        .describe("An `sms` channel of the test environment: the message comes to it from `from`"),
      from: z
        .string()
        .min(1)
        .max(32)
        .optional()
        .describe("With `channel_id`: the sender's phone, in E.164 or as typed in the channel's default region"),
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
