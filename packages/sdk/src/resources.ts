import type { OperationRequest, OperationResponse } from "@parley/schema";
import { type OperationOf, type Route, routes } from "@parley/schema/runtime";
import type { APIPromise, RequestOptions, Transport } from "./core.js";
import { type ListEnvelope, PagePromise } from "./pagination.js";

// Typed from the catalogue's operation each route stands for; only the route is loaded at run time.
export type Body<R extends Route> = NonNullable<OperationRequest<OperationOf<R>>["body"]>;
export type Query<R extends Route> = NonNullable<OperationRequest<OperationOf<R>>["query"]>;
export type Result<R extends Route> = OperationResponse<OperationOf<R>>;
type Item<R extends Route> = Result<R> extends ListEnvelope<infer I> ? I : never;

/** The calls every resource is made of, typed from the catalogue's operation. */
export class Calls {
  constructor(readonly transport: Transport) {}

  call<O extends Route>(
    operation: O,
    params: Record<string, string>,
    body?: Body<O>,
    options?: RequestOptions,
  ): APIPromise<Result<O>> {
    return this.transport.request<Result<O>>(operation, { params, body }, options);
  }

  query<O extends Route>(
    operation: O,
    params: Record<string, string>,
    query?: Query<O>,
    options?: RequestOptions,
  ): APIPromise<Result<O>> {
    return this.transport.request<Result<O>>(operation, { params, query: query as Record<string, unknown> }, options);
  }

  list<O extends Route>(
    operation: O,
    params: Record<string, string>,
    query?: Query<O>,
    options?: RequestOptions,
  ): PagePromise<Item<O>> {
    return new PagePromise<Item<O>>((after) =>
      this.transport.request<ListEnvelope<Item<O>>>(
        operation,
        { params, query: { ...(query as Record<string, unknown>), ...(after ? { after } : {}) } },
        options,
      ),
    );
  }
}

export function contactsResource(c: Calls) {
  const ops = routes.contacts;
  return {
    list: (query?: Query<typeof ops.list>, options?: RequestOptions) => c.list(ops.list, {}, query, options),
    create: (body: Body<typeof ops.create>, options?: RequestOptions) => c.call(ops.create, {}, body, options),
    get: (id: string, options?: RequestOptions) => c.call(ops.get, { contact_id: id }, undefined, options),
    update: (id: string, body: Body<typeof ops.update>, options?: RequestOptions) =>
      c.call(ops.update, { contact_id: id }, body, options),
    delete: (id: string, options?: RequestOptions) => c.call(ops.delete, { contact_id: id }, undefined, options),
    optOuts: {
      /** The SMS channels the contact texted STOP to (and not START since), newest first. */
      list: (id: string, query?: Query<typeof ops.optOuts>, options?: RequestOptions) =>
        c.list(ops.optOuts, { contact_id: id }, query, options),
    },
  };
}

export function conversationsResource(c: Calls) {
  const ops = routes.conversations;
  const id = (conversationId: string) => ({ conversation_id: conversationId });
  return {
    list: (query?: Query<typeof ops.list>, options?: RequestOptions) => c.list(ops.list, {}, query, options),
    create: (body: Body<typeof ops.create>, options?: RequestOptions) => c.call(ops.create, {}, body, options),
    get: (conversationId: string, options?: RequestOptions) => c.call(ops.get, id(conversationId), undefined, options),
    update: (conversationId: string, body: Body<typeof ops.update>, options?: RequestOptions) =>
      c.call(ops.update, id(conversationId), body, options),
    close: (conversationId: string, options?: RequestOptions) =>
      c.call(ops.close, id(conversationId), undefined, options),
    reopen: (conversationId: string, options?: RequestOptions) =>
      c.call(ops.reopen, id(conversationId), undefined, options),
    assign: (conversationId: string, body: Body<typeof ops.assign>, options?: RequestOptions) =>
      c.call(ops.assign, id(conversationId), body, options),
    unassign: (conversationId: string, options?: RequestOptions) =>
      c.call(ops.unassign, id(conversationId), undefined, options),
    /** Web chat: the visitor sees typing dots for a few seconds; repeat while typing, `{ typing: false }` to stop. */
    typing: (conversationId: string, body?: Body<typeof ops.typing>, options?: RequestOptions) =>
      c.call(ops.typing, id(conversationId), body ?? {}, options),
    tags: {
      add: (conversationId: string, body: Body<typeof ops.addTag>, options?: RequestOptions) =>
        c.call(ops.addTag, id(conversationId), body, options),
      remove: (conversationId: string, tagId: string, options?: RequestOptions) =>
        c.call(ops.removeTag, { conversation_id: conversationId, tag_id: tagId }, undefined, options),
    },
    notes: {
      list: (conversationId: string, query?: Query<typeof routes.notes.list>, options?: RequestOptions) =>
        c.list(routes.notes.list, id(conversationId), query, options),
      create: (conversationId: string, body: Body<typeof routes.notes.create>, options?: RequestOptions) =>
        c.call(routes.notes.create, id(conversationId), body, options),
      /** Only the key that wrote the note may edit it. */
      update: (
        conversationId: string,
        noteId: string,
        body: Body<typeof routes.notes.update>,
        options?: RequestOptions,
      ) => c.call(routes.notes.update, { conversation_id: conversationId, note_id: noteId }, body, options),
      /** Only the key that wrote the note may delete it. */
      delete: (conversationId: string, noteId: string, options?: RequestOptions) =>
        c.call(routes.notes.delete, { conversation_id: conversationId, note_id: noteId }, undefined, options),
    },
    messages: {
      list: (conversationId: string, query?: Query<typeof routes.messages.list>, options?: RequestOptions) =>
        c.list(routes.messages.list, id(conversationId), query, options),
    },
  };
}

export function channelsResource(c: Calls) {
  const ops = routes.channels;
  return {
    list: (query?: Query<typeof ops.list>, options?: RequestOptions) => c.list(ops.list, {}, query, options),
    get: (id: string, options?: RequestOptions) => c.call(ops.get, { channel_id: id }, undefined, options),
    /** Hands Parley a raw email (RFC 822) received for this email channel; answers the stored message. */
    receiveEmail: (id: string, raw: Uint8Array | string, options?: RequestOptions) =>
      c.transport.request<Result<typeof ops.receiveEmail>>(
        ops.receiveEmail,
        { params: { channel_id: id }, bytes: { data: raw, contentType: "message/rfc822" } },
        options,
      ),
  };
}

export function usersResource(c: Calls) {
  const ops = routes.users;
  return {
    list: (query?: Query<typeof ops.list>, options?: RequestOptions) => c.list(ops.list, {}, query, options),
    get: (id: string, options?: RequestOptions) => c.call(ops.get, { user_id: id }, undefined, options),
  };
}

export function teamsResource(c: Calls) {
  const ops = routes.teams;
  return {
    list: (query?: Query<typeof ops.list>, options?: RequestOptions) => c.list(ops.list, {}, query, options),
    create: (body: Body<typeof ops.create>, options?: RequestOptions) => c.call(ops.create, {}, body, options),
    get: (id: string, options?: RequestOptions) => c.call(ops.get, { team_id: id }, undefined, options),
    update: (id: string, body: Body<typeof ops.update>, options?: RequestOptions) =>
      c.call(ops.update, { team_id: id }, body, options),
    delete: (id: string, options?: RequestOptions) => c.call(ops.delete, { team_id: id }, undefined, options),
    users: {
      list: (teamId: string, query?: Query<typeof ops.users>, options?: RequestOptions) =>
        c.list(ops.users, { team_id: teamId }, query, options),
      /** Answers the team; adding a member again changes nothing. */
      add: (teamId: string, body: Body<typeof ops.addUser>, options?: RequestOptions) =>
        c.call(ops.addUser, { team_id: teamId }, body, options),
      /** Answers the team; removing an agent who is not a member changes nothing. */
      remove: (teamId: string, userId: string, options?: RequestOptions) =>
        c.call(ops.removeUser, { team_id: teamId, user_id: userId }, undefined, options),
    },
  };
}

export function tagsResource(c: Calls) {
  const ops = routes.tags;
  return {
    list: (query?: Query<typeof ops.list>, options?: RequestOptions) => c.list(ops.list, {}, query, options),
    create: (body: Body<typeof ops.create>, options?: RequestOptions) => c.call(ops.create, {}, body, options),
    update: (id: string, body: Body<typeof ops.update>, options?: RequestOptions) =>
      c.call(ops.update, { tag_id: id }, body, options),
    delete: (id: string, options?: RequestOptions) => c.call(ops.delete, { tag_id: id }, undefined, options),
  };
}

export function customFieldsResource(c: Calls) {
  const ops = routes.customFields;
  return {
    list: (query?: Query<typeof ops.list>, options?: RequestOptions) => c.list(ops.list, {}, query, options),
    create: (body: Body<typeof ops.create>, options?: RequestOptions) => c.call(ops.create, {}, body, options),
    update: (id: string, body: Body<typeof ops.update>, options?: RequestOptions) =>
      c.call(ops.update, { custom_field_id: id }, body, options),
    /** The field's value disappears from every contact that had one. */
    delete: (id: string, options?: RequestOptions) => c.call(ops.delete, { custom_field_id: id }, undefined, options),
  };
}

export function eventsResource(c: Calls) {
  const ops = routes.events;
  return {
    list: (query?: Query<typeof ops.list>, options?: RequestOptions) => c.list(ops.list, {}, query, options),
    get: (id: string, options?: RequestOptions) => c.call(ops.get, { event_id: id }, undefined, options),
  };
}

export function testHelpersResource(c: Calls) {
  const ops = routes.testHelpers;
  return {
    inboundMessages: {
      /** Test keys only: a message from the contact, as a channel would record it. */
      create: (body: Body<typeof ops.inboundMessage>, options?: RequestOptions) =>
        c.call(ops.inboundMessage, {}, body, options),
    },
  };
}

export function apiKeysResource(c: Calls) {
  return {
    /** The calling key: organization, environment, scopes (never the key). */
    current: (options?: RequestOptions) => c.call(routes.apiKeys.current, {}, undefined, options),
  };
}
