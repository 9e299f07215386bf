import { recordEvent, recordEvents, serializeConversation } from "@parley/core";
import { isUniqueViolation, newId, type Queryable } from "@parley/db";
import { type api, type Conversation, contactLimits, type OperationInput } from "@parley/schema";
import { findChannel } from "../channels/service.js";
import { findContact, tagIdsByContact } from "../contacts/queries.js";
import { changeContactTags } from "../contacts/service.js";
import { type AppContext, relayNow } from "../context.js";
import { ApiError, notFound } from "../http/api-error.js";
import type { Tenant } from "../http/auth.js";
import { listKeyOf, toPage } from "../http/pagination.js";
import { findTagsByIds } from "../tags/queries.js";
import { findTeam } from "../teams/service.js";
import { findUser } from "../users/service.js";
import {
  type ConversationRow,
  type ConversationWithChannel,
  findConversation,
  findConversationByExternalId,
  insertConversation,
  listConversations,
  lockContactForConversation,
  type NewConversationRow,
  updateConversationRow,
} from "./queries.js";

type CreateInput = OperationInput<typeof api.conversations.create>["body"];
type UpdateInput = OperationInput<typeof api.conversations.update>["body"];
type AssignInput = OperationInput<typeof api.conversations.assign>["body"];
type ListQuery = OperationInput<typeof api.conversations.list>["query"];

const serialize = (row: ConversationWithChannel) => serializeConversation(row.conversation, row.channelType);

export async function listConversationsPage(app: AppContext, tenant: Tenant, query: ListQuery) {
  const listKey = listKeyOf("conversations.list", tenant);
  const after = app.cursors.decode(listKey, query.after);
  const filters = {
    status: query.status,
    channelId: query.channel_id,
    channelType: query.channel_type,
    contactId: query.contact_id,
    assignedTo: query.assigned_to,
    teamId: query.team_id,
    tagId: query.tag_id,
    externalId: query.external_id,
    createdAfter: query.created_after,
    createdBefore: query.created_before,
    updatedAfter: query.updated_after,
    updatedBefore: query.updated_before,
  };
  const rows = await listConversations(app.db, tenant, filters, query.limit, after);
  return toPage(rows, query.limit, { codec: app.cursors, listKey }, (page) => page.map(serialize));
}

export async function getConversation(app: AppContext, tenant: Tenant, id: string): Promise<Conversation> {
  const row = await findConversation(app.db, tenant, id);
  if (!row) throw notFound("conversation", id);
  return serialize(row);
}

/** Find-or-create on `external_id`: an existing conversation comes back unchanged. */
export async function createConversation(
  app: AppContext,
  tenant: Tenant,
  input: CreateInput,
): Promise<{ conversation: Conversation; created: boolean }> {
  if (input.external_id) {
    const existing = await findConversationByExternalId(app.db, tenant, input.external_id);
    if (existing) return { conversation: serialize(existing), created: false };
  }
  return app.db.transaction(async (tx) => {
    const contact = await lockContactForConversation(tx, tenant, input.contact_id);
    if (!contact)
      throw new ApiError("resource_not_found", `No such contact: '${input.contact_id}'`, { param: "contact_id" });
    const channel = input.channel_id ? await findChannel(tx, tenant, input.channel_id) : undefined;
    if (input.channel_id && !channel) {
      throw new ApiError("resource_not_found", `No such channel: '${input.channel_id}'`, { param: "channel_id" });
    }
    const row = await insertConversation(tx, {
      id: newId("conversation"),
      ...tenant,
      contactId: contact.id,
      channelId: channel?.id ?? null,
      externalId: input.external_id ?? null,
      metadata: input.metadata ?? {},
    });
    if (!row) {
      // Another request created the same external_id between our look-up and our insert.
      const winner = input.external_id ? await findConversationByExternalId(tx, tenant, input.external_id) : undefined;
      if (!winner) throw new Error("conversation insert conflicted without an external_id");
      return { conversation: serialize(winner), created: false };
    }
    const conversation = serializeConversation(row, channel?.type ?? null);
    await recordEvent(tx, tenant, "conversation.created", { conversation }, { relayNow: relayNow(app) });
    return { conversation, created: true };
  });
}

/**
 * Runs `change` on the locked conversation inside one transaction and records the
 * events it names with the conversation as it is afterwards.
 */
async function changeConversation(
  app: AppContext,
  tenant: Tenant,
  id: string,
  change: (
    tx: Queryable,
    current: ConversationRow,
  ) => Promise<{ changes: Partial<NewConversationRow>; events: ConversationEvent[] } | undefined>,
): Promise<Conversation> {
  return app.db.transaction(async (tx) => {
    const current = await findConversation(tx, tenant, id, "update");
    if (!current) throw notFound("conversation", id);
    const outcome = await change(tx, current.conversation);
    if (!outcome) return serialize(current);
    const row = await updateConversationRow(tx, tenant, current.conversation.id, outcome.changes);
    const conversation = serializeConversation(row, current.channelType);
    // One statement for the change's events: as one batch, in order, to each endpoint.
    await recordEvents(
      tx,
      outcome.events.map((type) => ({ tenant, type, data: { conversation } })),
      { relayNow: relayNow(app) },
    );
    return conversation;
  });
}

type ConversationEvent =
  | "conversation.updated"
  | "conversation.assigned"
  | "conversation.closed"
  | "conversation.reopened";

/** Status moves keep `closed_at` true: stamped on entering `closed`, cleared on leaving it. */
function statusChange(current: ConversationRow, status: ConversationRow["status"]) {
  if (status === current.status) return { changes: {}, events: [] as ConversationEvent[] };
  if (status === "closed")
    return { changes: { status, closedAt: new Date() }, events: ["conversation.closed" as const] };
  if (current.status === "closed") {
    return { changes: { status, closedAt: null }, events: ["conversation.reopened" as const] };
  }
  return { changes: { status }, events: [] as ConversationEvent[] };
}

export async function updateConversation(app: AppContext, tenant: Tenant, id: string, input: UpdateInput) {
  try {
    return await changeConversation(app, tenant, id, async (tx, current) => {
      const status = input.status ? statusChange(current, input.status) : { changes: {}, events: [] };
      const teamId = input.team_id === undefined ? undefined : await teamIdFor(tx, tenant, input.team_id);
      const teamChanged = teamId !== undefined && teamId !== current.teamId;
      return {
        changes: {
          ...status.changes,
          ...(input.external_id !== undefined ? { externalId: input.external_id } : {}),
          ...(input.metadata !== undefined ? { metadata: input.metadata } : {}),
          ...(teamChanged ? { teamId } : {}),
        },
        events: [
          "conversation.updated",
          ...(teamChanged ? (["conversation.assigned"] as const) : []),
          ...status.events,
        ],
      };
    });
  } catch (error) {
    if (isUniqueViolation(error, "conversations_external_id_key")) {
      throw new ApiError("resource_already_exists", "Another conversation already has this external_id.", {
        param: "external_id",
      });
    }
    throw error;
  }
}

/** A PATCH's `team_id`: null removes the team; a team of another organization or environment is 404. */
async function teamIdFor(tx: Queryable, tenant: Tenant, teamId: string | null): Promise<string | null> {
  if (teamId === null) return null;
  const team = await findTeam(tx, tenant, teamId);
  if (!team) throw new ApiError("resource_not_found", `No such team: '${teamId}'`, { param: "team_id" });
  return team.id;
}

/** Closing a closed conversation changes nothing and keeps its first `closed_at`. */
export async function closeConversation(app: AppContext, tenant: Tenant, id: string) {
  return changeConversation(app, tenant, id, async (_tx, current) =>
    current.status === "closed" ? undefined : statusChange(current, "closed"),
  );
}

export async function reopenConversation(app: AppContext, tenant: Tenant, id: string) {
  return changeConversation(app, tenant, id, async (_tx, current) => {
    if (current.status !== "closed") {
      throw new ApiError(
        "invalid_state",
        `Only a closed conversation can be reopened; this one is '${current.status}'.`,
      );
    }
    return statusChange(current, "open");
  });
}

export async function assignConversation(app: AppContext, tenant: Tenant, id: string, input: AssignInput) {
  return changeConversation(app, tenant, id, async (tx) => {
    const changes: Partial<NewConversationRow> = {};
    if (input.user_id !== undefined) {
      const user = await findUser(tx, tenant, input.user_id);
      if (!user) throw new ApiError("resource_not_found", `No such user: '${input.user_id}'`, { param: "user_id" });
      changes.assignedUserId = user.id;
    }
    if (input.team_id !== undefined) {
      // Held against a concurrent delete of the team until the assignment is in.
      const team = await findTeam(tx, tenant, input.team_id, "key share");
      if (!team) throw new ApiError("resource_not_found", `No such team: '${input.team_id}'`, { param: "team_id" });
      changes.teamId = team.id;
    }
    return { changes, events: ["conversation.assigned"] };
  });
}

/** "Removes the current assignee" (the spec): the agent only; the team stays (PATCH `team_id: null` removes it). */
export async function unassignConversation(app: AppContext, tenant: Tenant, id: string) {
  return changeConversation(app, tenant, id, async (_tx, current) => {
    if (current.assignedUserId === null) return undefined;
    return { changes: { assignedUserId: null }, events: ["conversation.assigned"] };
  });
}

/** Tags live on the contact: the conversation is only the way in. */
export async function tagConversation(
  app: AppContext,
  tenant: Tenant,
  id: string,
  change: { add?: string; remove?: string },
): Promise<Conversation> {
  return app.db.transaction(async (tx) => {
    const current = await findConversation(tx, tenant, id);
    if (!current) throw notFound("conversation", id);
    const contact = await findContact(tx, tenant, current.conversation.contactId, true);
    if (!contact) throw notFound("conversation", id);
    const tagId = change.add ?? change.remove ?? "";
    // Locked like every tag being linked, so a concurrent delete cannot break the link.
    const [tag] = await findTagsByIds(tx, tenant, [tagId], true);
    if (!tag)
      throw new ApiError("resource_not_found", `No such tag: '${tagId}'`, change.add ? { param: "tag_id" } : {});
    if (change.add) {
      const current = (await tagIdsByContact(tx, tenant, [contact.id])).get(contact.id) ?? [];
      if (!current.includes(tag.id) && current.length >= contactLimits.tags) {
        throw new ApiError("validation_error", `A contact holds at most ${contactLimits.tags} tags.`, {
          param: "tag_id",
          details: [{ param: "tag_id", message: `the contact already has ${contactLimits.tags} tags` }],
        });
      }
    }
    await changeContactTags(tx, tenant, contact, change.add ? { add: [tag] } : { remove: [tag] });
    return serialize(current);
  });
}
