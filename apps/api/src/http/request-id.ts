import { ulid } from "@parley/db";
import type { Request, RequestHandler, Response } from "express";

export const REQUEST_ID_HEADER = "X-Parley-Request-Id";

/** Gives the request its id, in `req.requestId` and the response's header. */
export function assignRequestId(req: Request, res: Response): void {
  req.requestId = `req_${ulid()}`;
  res.setHeader(REQUEST_ID_HEADER, req.requestId);
}

export const requestId: RequestHandler = (req, res, next) => {
  assignRequestId(req, res);
  next();
};
