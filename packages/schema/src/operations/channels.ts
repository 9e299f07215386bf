import { z } from "zod";
import { defineOperation } from "../operation.js";
import { listOf, paginationQuery } from "../primitives.js";
import { channel, channelType } from "../resources/channel.js";
import { message } from "../resources/message.js";

export const channelOperations = {
  list: defineOperation({
    id: "channels.list",
    method: "get",
    path: "/channels",
    tag: "Channels",
    summary: "List channels",
    description: "With each channel's capability matrix. A test key sees the sandbox channels, one per type.",
    scope: "channels:read",
    query: z.strictObject({ ...paginationQuery, type: channelType.optional() }),
    response: listOf(channel),
    responseName: "ChannelList",
    status: 200,
    errors: ["invalid_cursor"],
  }),
  get: defineOperation({
    id: "channels.get",
    method: "get",
    path: "/channels/{channel_id}",
    tag: "Channels",
    summary: "Retrieve a channel",
    scope: "channels:read",
    params: z.object({ channel_id: z.string() }),
    response: channel,
    responseName: "Channel",
    status: 200,
    errors: [],
  }),
  receiveEmail: defineOperation({
    id: "channels.receive_email",
    method: "post",
    path: "/channels/{channel_id}/inbound-email",
    tag: "Channels",
    summary: "Receive an email",
    description:
      "For mail routed to Parley over HTTP (a mail server's pipe, an inbound-parse service): the raw message as `message/rfc822`, at most 25 MB. It is threaded into the conversation holding the message it answers (`In-Reply-To`, `References`), else the sender's latest conversation on this channel, else a new one (with a new contact when the address is unknown); quoted history is stripped from the text, each attachment becomes a media message, and `message.received` is emitted. 201 with the (first) message; 200 with the stored one when the same `Message-ID` arrives again. Test keys may use it with the sandbox email channel.",
    scope: "messages:write",
    params: z.object({ channel_id: z.string() }),
    requestContentType: "message/rfc822",
    response: message,
    responseName: "Message",
    status: 201,
    errors: ["invalid_state"],
  }),
};
