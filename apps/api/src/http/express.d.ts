import type { Logger } from "pino";
import type { AuthContext } from "./auth.js";

declare global {
  namespace Express {
    interface Request {
      requestId: string;
      /** Set by the auth middleware on every authenticated route. */
      auth?: AuthContext;
      log: Logger;
    }
  }
}
