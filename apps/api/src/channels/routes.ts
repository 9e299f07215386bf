import { api } from "@parley/schema";
import type { Router } from "express";
import type { AppContext } from "../context.js";
import { bindOperation } from "../http/route.js";
import { receiveEmailOverHttp } from "./inbound-email.js";
import { getChannel, listChannelsPage } from "./service.js";

export function channelRoutes(router: Router, app: AppContext) {
  bindOperation(router, app, api.channels.list, async ({ tenant, query }) => ({
    body: await listChannelsPage(app, tenant, query),
  }));
  bindOperation(router, app, api.channels.get, async ({ tenant, params }) => ({
    body: await getChannel(app, tenant, params.channel_id),
  }));
  bindOperation(router, app, api.channels.receiveEmail, async ({ tenant, params, req, res }) =>
    receiveEmailOverHttp(app, tenant, params.channel_id, req, res),
  );
}
