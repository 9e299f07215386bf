import { z } from "zod";
import { defineOperation } from "../operation.js";
import { listOf, paginationQuery } from "../primitives.js";
import { channel, channelType } from "../resources/channel.js";

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
    errors: ["validation_error", "invalid_cursor"],
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
    errors: ["resource_not_found"],
  }),
};
