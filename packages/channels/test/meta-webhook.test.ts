import { describe, expect, it } from "vitest";
import { metaAccountIds, parseMetaWebhook } from "../src/meta/webhook.js";
import {
  instagramMessage,
  instagramRead,
  messengerDelivery,
  messengerRead,
  messengerTextMessage,
  whatsappMediaMessage,
  whatsappOtherMessage,
  whatsappStatus,
  whatsappTextMessage,
} from "../testing/meta-simulator.js";

const PHONE_NUMBER_ID = "106540352242922";
const PAGE_ID = "110200000000001";
const IG_ACCOUNT_ID = "17841400000000001";
const WHATSAPP = { type: "whatsapp", phoneNumberId: PHONE_NUMBER_ID };
const MESSENGER = { type: "messenger", pageId: PAGE_ID };
const INSTAGRAM = { type: "instagram", accountId: IG_ACCOUNT_ID };
const RECEIVED_AT = new Date("2025-07-01T12:00:00Z");

describe("parseMetaWebhook: WhatsApp Cloud API", () => {
  it("reads Meta's documented text message payload", () => {
    // Verbatim shape of the Cloud API's "messages" webhook for a text message.
    const payload = {
      object: "whatsapp_business_account",
      entry: [
        {
          id: "102290129340398",
          changes: [
            {
              value: {
                messaging_product: "whatsapp",
                metadata: { display_phone_number: "15550783881", phone_number_id: PHONE_NUMBER_ID },
                contacts: [{ profile: { name: "Sheena Nelson" }, wa_id: "16505551234" }],
                messages: [
                  {
                    from: "16505551234",
                    id: "wamid.HBgLMTY1MDUwNzY1MjAVAgASGBQzQTRBNjU5OUFFRTAzODEwMTQ0RgA=",
                    timestamp: "1749416383",
                    type: "text",
                    text: { body: "Does it come in another color?" },
                  },
                ],
              },
              field: "messages",
            },
          ],
        },
      ],
    };

    expect(parseMetaWebhook(payload, RECEIVED_AT)).toEqual([
      {
        kind: "message",
        channel: WHATSAPP,
        providerMessageId: "wamid.HBgLMTY1MDUwNzY1MjAVAgASGBQzQTRBNjU5OUFFRTAzODEwMTQ0RgA=",
        from: { id: "16505551234", name: "Sheena Nelson" },
        timestamp: new Date(1749416383 * 1000),
        type: "text",
        text: "Does it come in another color?",
        media: null,
      },
    ]);
  });

  it.each([
    ["image", "image/jpeg", "image", "Look at this", null],
    ["video", "video/mp4", "video", "A video", null],
    ["audio", "audio/ogg; codecs=opus", "audio", null, null],
    ["document", "application/pdf", "document", "The invoice", "invoice-42.pdf"],
    ["sticker", "image/webp", "image", null, null],
  ] as const)(
    "reads a %s message: the media id and type, the caption as text",
    (kind, mimeType, type, caption, filename) => {
      const payload = whatsappMediaMessage({
        phoneNumberId: PHONE_NUMBER_ID,
        from: "16505551234",
        id: "wamid.media",
        mediaId: "1037543291543636",
        mimeType,
        kind,
        ...(caption === null ? {} : { caption }),
        ...(filename === null ? {} : { filename }),
      });

      const [item] = parseMetaWebhook(payload, RECEIVED_AT);
      expect(item).toMatchObject({
        kind: "message",
        channel: WHATSAPP,
        providerMessageId: "wamid.media",
        type,
        text: caption,
        media: { id: "1037543291543636", url: null, contentType: mimeType, filename },
      });
    },
  );

  it("drops NUL characters and mends lone surrogates, which PostgreSQL cannot store, keeping the message", () => {
    const payload = whatsappMediaMessage({
      phoneNumberId: PHONE_NUMBER_ID,
      from: "16505551234",
      id: "wamid.\u0000nul",
      mediaId: "1037543291543636",
      mimeType: "image/jpeg",
      kind: "image",
      caption: "Lo\u0000ok \ud83d here",
    });

    const [item] = parseMetaWebhook(payload, RECEIVED_AT);
    expect(item).toMatchObject({ providerMessageId: "wamid.nul", text: "Look \ufffd here" });
  });

  it("takes the label of a tapped button or list row as the text", () => {
    const button = whatsappOtherMessage({
      phoneNumberId: PHONE_NUMBER_ID,
      from: "16505551234",
      type: "button",
      content: { payload: "YES", text: "Yes, ship it" },
    });
    const list = whatsappOtherMessage({
      phoneNumberId: PHONE_NUMBER_ID,
      from: "16505551234",
      type: "interactive",
      content: { type: "list_reply", list_reply: { id: "row-2", title: "Tomorrow", description: "9-12" } },
    });

    expect(parseMetaWebhook(button)[0]).toMatchObject({ type: "text", text: "Yes, ship it" });
    expect(parseMetaWebhook(list)[0]).toMatchObject({ type: "text", text: "Tomorrow" });
  });

  it.each([
    ["location", { latitude: 52.52, longitude: 13.4, name: "Office" }, "[unsupported location message]"],
    ["reaction", { message_id: "wamid.x", emoji: "👍" }, "[unsupported reaction message]"],
    ["contacts", [{ name: { formatted_name: "Bob" } }], "[unsupported contacts message]"],
    ["unsupported", undefined, "[unsupported message]"],
  ])("turns a %s message into a text saying something arrived", (type, content, text) => {
    const payload = whatsappOtherMessage({
      phoneNumberId: PHONE_NUMBER_ID,
      from: "16505551234",
      id: "wamid.o",
      type,
      content,
    });
    expect(parseMetaWebhook(payload)).toMatchObject([
      { kind: "message", providerMessageId: "wamid.o", type: "text", text, media: null },
    ]);
  });

  it.each(["sent", "delivered", "read"] as const)("reads a %s status with its callback data", (status) => {
    const at = new Date("2025-07-01T10:00:00Z");
    const payload = whatsappStatus({
      phoneNumberId: PHONE_NUMBER_ID,
      id: "wamid.out",
      status,
      recipientId: "16505551234",
      callbackData: "msg_01JZ",
      timestamp: at,
    });

    expect(parseMetaWebhook(payload)).toEqual([
      {
        kind: "status",
        channel: WHATSAPP,
        providerMessageId: "wamid.out",
        callbackData: "msg_01JZ",
        status,
        error: null,
        timestamp: at,
      },
    ]);
  });

  it("passes a failed status's first error on untranslated: its code and title", () => {
    const payload = whatsappStatus({
      phoneNumberId: PHONE_NUMBER_ID,
      id: "wamid.out",
      status: "failed",
      recipientId: "16505551234",
      error: {
        code: 131047,
        title: "Re-engagement message",
        details: "Message failed to send because more than 24 hours",
      },
    });

    expect(parseMetaWebhook(payload)).toMatchObject([
      {
        kind: "status",
        status: "failed",
        callbackData: null,
        error: { code: "131047", message: "Re-engagement message" },
      },
    ]);
  });

  it("reads several messages and statuses of one delivery, in order", () => {
    const text = whatsappTextMessage({ phoneNumberId: PHONE_NUMBER_ID, from: "1", text: "one", id: "wamid.1" });
    const status = whatsappStatus({ phoneNumberId: PHONE_NUMBER_ID, id: "wamid.2", status: "read", recipientId: "1" });
    const merged = { ...text, entry: [...text.entry, ...status.entry] };

    expect(parseMetaWebhook(merged).map((item) => item.kind)).toEqual(["message", "status"]);
  });

  it("skips statuses it does not know and changes of other fields", () => {
    const read = whatsappStatus({ phoneNumberId: PHONE_NUMBER_ID, id: "wamid.2", status: "read", recipientId: "1" });
    const deleted = JSON.parse(JSON.stringify(read).replace('"status":"read"', '"status":"deleted"'));
    const template = {
      object: "whatsapp_business_account",
      entry: [{ id: "1", changes: [{ field: "message_template_status_update", value: { event: "APPROVED" } }] }],
    };

    expect(parseMetaWebhook(read)).toHaveLength(1);
    expect(parseMetaWebhook(deleted)).toEqual([]);
    expect(parseMetaWebhook(template)).toEqual([]);
  });

  it("stands in the receipt time for a missing timestamp rather than dropping the message", () => {
    const json = JSON.stringify(whatsappTextMessage({ phoneNumberId: PHONE_NUMBER_ID, from: "1", text: "hi" }));
    const payload = JSON.parse(json.replace(/"timestamp":"\d+",?/, ""));
    expect(JSON.stringify(payload)).not.toContain("timestamp");

    expect(parseMetaWebhook(payload, RECEIVED_AT)[0]).toMatchObject({ text: "hi", timestamp: RECEIVED_AT });
  });
});

describe("parseMetaWebhook: Messenger", () => {
  it("reads Meta's documented text message payload", () => {
    const payload = {
      object: "page",
      entry: [
        {
          id: PAGE_ID,
          time: 1583173667623,
          messaging: [
            {
              sender: { id: "3159315540852734" },
              recipient: { id: PAGE_ID },
              timestamp: 1583173666767,
              message: { mid: "m_toDnmD...", text: "This is a text message" },
            },
          ],
        },
      ],
    };

    expect(parseMetaWebhook(payload)).toEqual([
      {
        kind: "message",
        channel: MESSENGER,
        providerMessageId: "m_toDnmD...",
        from: { id: "3159315540852734", name: null },
        timestamp: new Date(1583173666767),
        type: "text",
        text: "This is a text message",
        media: null,
      },
    ]);
  });

  it("reads attachments by URL, a file as a document, several as several messages", () => {
    const payload = messengerTextMessage({
      pageId: PAGE_ID,
      psid: "3159",
      mid: "m_att",
      attachments: [
        { type: "image", url: "https://scontent.xx.fbcdn.net/v/t1/photo.jpg?oh=1" },
        { type: "file", url: "https://cdn.fbsbx.com/v/t59/report.pdf?oh=2" },
      ],
    });

    expect(parseMetaWebhook(payload)).toMatchObject([
      {
        providerMessageId: "m_att",
        type: "image",
        text: null,
        media: {
          id: null,
          url: "https://scontent.xx.fbcdn.net/v/t1/photo.jpg?oh=1",
          contentType: null,
          filename: null,
        },
      },
      {
        providerMessageId: "m_att#1",
        type: "document",
        media: { url: "https://cdn.fbsbx.com/v/t59/report.pdf?oh=2" },
      },
    ]);
  });

  it("skips echoes of the page's own messages", () => {
    const payload = messengerTextMessage({ pageId: PAGE_ID, psid: "3159", text: "Sent by the page", echo: true });
    expect(parseMetaWebhook(payload)).toEqual([]);
  });

  it("turns each delivered mid into a delivered status at the watermark", () => {
    const watermark = new Date(1458668856253);
    const payload = messengerDelivery({ pageId: PAGE_ID, psid: "3159", mids: ["m_1", "m_2"], watermark });

    expect(parseMetaWebhook(payload)).toEqual(
      ["m_1", "m_2"].map((mid) => ({
        kind: "status",
        channel: MESSENGER,
        providerMessageId: mid,
        callbackData: null,
        status: "delivered",
        error: null,
        timestamp: watermark,
      })),
    );
  });

  it("gives a delivery watermark when the delivery names no mids", () => {
    const watermark = new Date(1458668856253);
    const payload = messengerDelivery({ pageId: PAGE_ID, psid: "3159", watermark });

    expect(parseMetaWebhook(payload)).toEqual([
      { kind: "delivery_watermark", channel: MESSENGER, contactId: "3159", watermark },
    ]);
  });

  it("gives a read watermark for message_reads", () => {
    const watermark = new Date(1458668856253);
    const payload = messengerRead({ pageId: PAGE_ID, psid: "3159", watermark });

    expect(parseMetaWebhook(payload)).toEqual([
      { kind: "read_watermark", channel: MESSENGER, contactId: "3159", watermark },
    ]);
  });

  it("skips postbacks, reactions and other events", () => {
    const payload = {
      object: "page",
      entry: [
        {
          id: PAGE_ID,
          time: 1,
          messaging: [
            {
              sender: { id: "3159" },
              recipient: { id: PAGE_ID },
              timestamp: 1,
              postback: { title: "Start", payload: "GO" },
            },
            {
              sender: { id: "3159" },
              recipient: { id: PAGE_ID },
              timestamp: 1,
              reaction: { mid: "m_1", action: "react" },
            },
          ],
        },
      ],
    };
    expect(parseMetaWebhook(payload)).toEqual([]);
  });

  it("turns an attachment Parley cannot show into a placeholder text", () => {
    const payload = messengerTextMessage({
      pageId: PAGE_ID,
      psid: "3159",
      mid: "m_l",
      attachments: [{ type: "location" }],
    });
    expect(parseMetaWebhook(payload)).toMatchObject([{ type: "text", text: "[unsupported location message]" }]);
  });
});

describe("parseMetaWebhook: Instagram", () => {
  it("reads Meta's documented message payload", () => {
    const payload = {
      object: "instagram",
      entry: [
        {
          time: 1569262486134,
          id: IG_ACCOUNT_ID,
          messaging: [
            {
              sender: { id: "1234567890123456" },
              recipient: { id: IG_ACCOUNT_ID },
              timestamp: 1569262485349,
              message: { mid: "aWdfZAG1faXRlbToxOklHTWVzc2FnZAUlEOjE3", text: "Hello from Instagram" },
            },
          ],
        },
      ],
    };

    expect(parseMetaWebhook(payload)).toEqual([
      {
        kind: "message",
        channel: INSTAGRAM,
        providerMessageId: "aWdfZAG1faXRlbToxOklHTWVzc2FnZAUlEOjE3",
        from: { id: "1234567890123456", name: null },
        timestamp: new Date(1569262485349),
        type: "text",
        text: "Hello from Instagram",
        media: null,
      },
    ]);
  });

  it("reads media attachments and turns a story mention into a placeholder", () => {
    const payload = instagramMessage({
      accountId: IG_ACCOUNT_ID,
      igsid: "1234",
      mid: "aWdf1",
      attachments: [
        { type: "video", url: "https://lookaside.fbsbx.com/ig_messaging_cdn/?asset_id=1" },
        { type: "story_mention", url: "https://lookaside.fbsbx.com/ig_messaging_cdn/?asset_id=2" },
      ],
    });

    expect(parseMetaWebhook(payload)).toMatchObject([
      {
        channel: INSTAGRAM,
        providerMessageId: "aWdf1",
        type: "video",
        media: { url: expect.stringContaining("asset_id=1") },
      },
      { providerMessageId: "aWdf1#1", type: "text", text: "[unsupported story_mention message]", media: null },
    ]);
  });

  it("turns messaging_seen into a read status of the named message", () => {
    const at = new Date("2025-07-01T10:00:00Z");
    const payload = instagramRead({ accountId: IG_ACCOUNT_ID, igsid: "1234", mid: "aWdfOut", timestamp: at });

    expect(parseMetaWebhook(payload)).toEqual([
      {
        kind: "status",
        channel: INSTAGRAM,
        providerMessageId: "aWdfOut",
        callbackData: null,
        status: "read",
        error: null,
        timestamp: at,
      },
    ]);
  });
});

describe("parseMetaWebhook: what it does not understand", () => {
  it.each([
    ["null", null],
    ["a string", "whatsapp_business_account"],
    ["a number", 42],
    ["an array", [{ object: "page" }]],
    ["an empty object", {}],
    ["another object type", { object: "user", entry: [{ id: "1", changes: [] }] }],
    ["entry not a list", { object: "page", entry: { id: "1" } }],
    ["entries of the wrong kind", { object: "page", entry: [null, 1, "x", [], { id: {} }] }],
    ["changes not a list", { object: "whatsapp_business_account", entry: [{ id: "1", changes: "messages" }] }],
    [
      "a change without metadata",
      { object: "whatsapp_business_account", entry: [{ changes: [{ field: "messages", value: { messages: [{}] } }] }] },
    ],
    [
      "messages of the wrong kind",
      {
        object: "whatsapp_business_account",
        entry: [
          {
            changes: [
              {
                field: "messages",
                value: {
                  metadata: { phone_number_id: PHONE_NUMBER_ID },
                  contacts: "nobody",
                  messages: [null, 3, { id: "wamid.x" }, { from: "1" }],
                  statuses: [{ id: "wamid.x" }, { status: "read" }, null],
                },
              },
            ],
          },
        ],
      },
    ],
    [
      "messaging events of the wrong kind",
      {
        object: "page",
        entry: [
          { id: PAGE_ID, messaging: [null, {}, { sender: {} }, { sender: { id: "1" }, message: { text: "no mid" } }] },
        ],
      },
    ],
    [
      "a read without watermark or mid",
      { object: "page", entry: [{ id: PAGE_ID, messaging: [{ sender: { id: "1" }, read: {} }] }] },
    ],
  ])("returns nothing for %s, without throwing", (_case, body) => {
    expect(parseMetaWebhook(body)).toEqual([]);
  });

  it("keeps the events it understands next to ones it does not", () => {
    const good = messengerTextMessage({ pageId: PAGE_ID, psid: "3159", text: "kept", mid: "m_ok" });
    const messaging = [null, { sender: 5 }, ...(good.entry[0]?.messaging ?? []), { message: "nope" }];
    const payload = { object: "page", entry: [{ id: PAGE_ID, messaging }] };

    expect(parseMetaWebhook(payload)).toMatchObject([{ providerMessageId: "m_ok", text: "kept" }]);
  });
});

describe("metaAccountIds: the accounts a delivery names, read before its signature is checked", () => {
  it("takes every entry id and WhatsApp phone number id, distinct, in order", () => {
    const body = {
      object: "whatsapp_business_account",
      entry: [
        { id: "111", changes: [{ field: "messages", value: { metadata: { phone_number_id: "222" } } }] },
        { id: "111", changes: [{ value: { metadata: { phone_number_id: 333 } } }, { value: {} }, "junk"] },
        { id: "444", messaging: [] },
      ],
    };
    expect(metaAccountIds(body, 100)).toEqual(["111", "222", "333", "444"]);
  });

  it("ignores what is not an id and stops at the limit", () => {
    expect(metaAccountIds({ entry: [{ id: { nested: 1 } }, { id: -5 }, { id: "" }, null, "x"] }, 10)).toEqual([]);
    expect(metaAccountIds(null, 10)).toEqual([]);
    expect(metaAccountIds({ entry: "not a list" }, 10)).toEqual([]);
    const many = { entry: Array.from({ length: 50 }, (_, index) => ({ id: String(1000 + index) })) };
    expect(metaAccountIds(many, 5)).toEqual(["1000", "1001", "1002", "1003", "1004"]);
  });
});
