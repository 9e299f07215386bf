import type { Capabilities, ChannelType, MessageType } from "@parley/schema";

export { type ChannelType, channelTypes, type MessageType, messageTypes } from "@parley/schema";

export interface ChannelCapabilities {
  /** The message types this channel can carry out. */
  messageTypes: readonly Exclude<MessageType, "template">[];
  /** The channel confirms arrival at the device (`delivered`). */
  deliveryReceipts: boolean;
  /** The channel reports that the contact read the message (`read`). */
  readReceipts: boolean;
  /** Free messages are accepted only this long after the contact's last message; null when unlimited. */
  sessionWindowHours: number | null;
}

export interface ChannelDefinition {
  type: ChannelType;
  /** Human name of the platform. */
  label: string;
  /** The most a channel of the type can do. */
  capabilities: ChannelCapabilities;
  /**
   * What one channel of the type can do, by its settings (an SMS number that cannot send
   * MMS carries text only). Absent: every channel of the type can do the same.
   */
  capabilitiesOf?: (settings: Record<string, unknown>) => ChannelCapabilities;
  /** Where the capabilities come from, for the docs. */
  source: string;
}

export function canCarry(capabilities: ChannelCapabilities, type: MessageType): boolean {
  return type !== "template" && capabilities.messageTypes.includes(type);
}

/** The `capabilities` matrix of the API, generated from the definition. */
export function capabilityMatrix(capabilities: ChannelCapabilities): Capabilities {
  return {
    message_types: [...capabilities.messageTypes],
    delivery_receipts: capabilities.deliveryReceipts,
    read_receipts: capabilities.readReceipts,
    session_window: capabilities.sessionWindowHours === null ? null : { hours: capabilities.sessionWindowHours },
  };
}
