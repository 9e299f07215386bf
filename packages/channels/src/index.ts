/** The channel types Parley carries messages on; one folder per type arrives with the channels issue. */
export const channelTypes = ["whatsapp", "instagram", "messenger", "email", "webchat"] as const;
export type ChannelType = (typeof channelTypes)[number];
