import type { ChannelStatus } from "@parley/schema";
import { ApiError } from "../http/api-error.js";

/**
 * A disconnected channel (`pnpm admin disconnect-channel`) sends and receives nothing:
 * 409 `invalid_state`, naming the channel and the way back.
 */
export function assertChannelConnected(channelId: string | null, status: ChannelStatus | null | undefined): void {
  if (status !== "disconnected") return;
  throw new ApiError(
    "invalid_state",
    `Channel '${channelId}' is disconnected: it sends and receives nothing until an operator reconnects it (pnpm admin reconnect-channel).`,
  );
}
