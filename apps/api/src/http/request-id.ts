import { ulid } from "@parley/db";
import type { RequestHandler } from "express";

export const REQUEST_ID_HEADER = "X-Parley-Request-Id";

export const requestId: RequestHandler = (req, res, next) => {
  req.requestId = `req_${ulid()}`;
  res.setHeader(REQUEST_ID_HEADER, req.requestId);
  next();
};
