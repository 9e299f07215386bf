import { pgTable, text, uniqueIndex } from "drizzle-orm/pg-core";
import { createdAt, tenantColumns } from "./columns.js";
import { contacts } from "./contacts.js";
import { channels } from "./conversations.js";

/**
 * A contact who texted STOP (or another stop word) to an SMS channel: nothing is sent to
 * them on that channel until they text START, which deletes the row. Goes with the contact.
 */
export const smsOptOuts = pgTable(
  "sms_opt_outs",
  {
    id: text("id").primaryKey(),
    ...tenantColumns(),
    contactId: text("contact_id")
      .notNull()
      .references(() => contacts.id, { onDelete: "cascade" }),
    channelId: text("channel_id")
      .notNull()
      .references(() => channels.id, { onDelete: "cascade" }),
    /** The stop word as recognised (`STOP`, `UNSUBSCRIBE`...), or the provider's verdict. */
    keyword: text("keyword").notNull(),
    /** When the contact opted out. */
    createdAt: createdAt(),
  },
  // One per contact and channel: read by every SMS delivery, and by the contact's list.
  // The organization leads, as in every unique key that a distributed table could keep.
  (t) => [uniqueIndex("sms_opt_outs_contact_channel_key").on(t.organizationId, t.contactId, t.channelId)],
);
