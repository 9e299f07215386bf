import { api } from "@parley/schema";
import type { Router } from "express";
import type { AppContext } from "../context.js";
import { bindOperation, bindRawOperation } from "../http/route.js";
import { sendAttachmentContent, uploadAttachment } from "./service.js";

export function attachmentRoutes(router: Router, app: AppContext) {
  bindOperation(router, app, api.attachments.upload, async ({ tenant, req }) => ({
    body: await uploadAttachment(app, tenant, req),
  }));
  bindRawOperation(router, api.attachments.content, async ({ tenant, params, res }) => {
    await sendAttachmentContent(app, tenant, params.attachment_id, res);
  });
}
