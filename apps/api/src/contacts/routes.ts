import { api } from "@parley/schema";
import type { Router } from "express";
import type { AppContext } from "../context.js";
import { bindOperation } from "../http/route.js";
import { listOptOutsPage } from "./opt-outs.js";
import { createContact, deleteContact, getContact, listContactsPage, updateContact } from "./service.js";

export function contactRoutes(router: Router, app: AppContext) {
  bindOperation(router, app, api.contacts.list, async ({ tenant, query }) => ({
    body: await listContactsPage(app, tenant, query),
  }));
  bindOperation(router, app, api.contacts.create, async ({ app: scoped, tenant, body }) => {
    const { contact, created } = await createContact(scoped, tenant, body);
    return { status: created ? 201 : 200, body: contact };
  });
  bindOperation(router, app, api.contacts.get, async ({ tenant, params }) => ({
    body: await getContact(app, tenant, params.contact_id),
  }));
  bindOperation(router, app, api.contacts.update, async ({ tenant, params, body }) => ({
    body: await updateContact(app, tenant, params.contact_id, body),
  }));
  bindOperation(router, app, api.contacts.optOuts, async ({ tenant, params, query }) => ({
    body: await listOptOutsPage(app, tenant, params.contact_id, query),
  }));
  bindOperation(router, app, api.contacts.delete, async ({ tenant, params }) => ({
    body: await deleteContact(app, tenant, params.contact_id),
  }));
}
