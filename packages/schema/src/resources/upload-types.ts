// Without zod: the SDK and the console read this at run time through `@parley/schema/runtime`.

/** The media kinds a file can be sent as; each is also a message `type`. */
export const mediaKinds = ["image", "audio", "document", "video"] as const;
export type MediaKind = (typeof mediaKinds)[number];

/** The spec's table of accepted upload types, by the message type they can be sent as. */
export const acceptedUploadTypes: Record<MediaKind, readonly string[]> = {
  image: ["image/jpeg", "image/png", "image/webp"],
  audio: ["audio/aac", "audio/mp4", "audio/mpeg", "audio/amr", "audio/ogg"],
  document: [
    "application/pdf",
    "application/msword",
    "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
    "application/vnd.ms-excel",
    "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
    "text/plain",
  ],
  video: ["video/mp4", "video/3gpp"],
};

/** 16 MB (16 × 1024 × 1024 bytes) per file, any type. */
export const MAX_UPLOAD_BYTES = 16 * 1024 * 1024;

export function mediaKindOf(contentType: string): MediaKind | undefined {
  return mediaKinds.find((kind) => acceptedUploadTypes[kind].includes(contentType));
}

/** For a generic `application/octet-stream` upload the file name's extension decides. */
export const uploadTypesByExtension: Record<string, string> = {
  jpg: "image/jpeg",
  jpeg: "image/jpeg",
  png: "image/png",
  webp: "image/webp",
  aac: "audio/aac",
  m4a: "audio/mp4",
  mp3: "audio/mpeg",
  amr: "audio/amr",
  ogg: "audio/ogg",
  oga: "audio/ogg",
  opus: "audio/ogg",
  pdf: "application/pdf",
  doc: "application/msword",
  docx: "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
  xls: "application/vnd.ms-excel",
  xlsx: "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
  txt: "text/plain",
  mp4: "video/mp4",
  "3gp": "video/3gpp",
};

/**
 * The API's words when a conversation's channel cannot carry a message type (422
 * `unsupported_message_type`): the console says them before sending.
 */
export function cannotCarryMessage(channelType: string, type: string): string {
  return `The ${channelType} channel cannot carry '${type}' messages; see the channel's capabilities.`;
}
