import type { Logger } from "pino";
import type { AuthContext } from "./auth.js";
import type { RateLimitWindow } from "./rate-limit.js";

declare global {
  namespace Express {
    interface Request {
      requestId: string;
      /** Set by the auth middleware on every authenticated route. */
      auth?: AuthContext;
      /** Set with `auth`: this request's number in its organization's current window. */
      rateLimitCount?: { count: number; window: RateLimitWindow };
      log: Logger;
    }
  }
}
