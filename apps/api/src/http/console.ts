import { existsSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import express, { type RequestHandler, type Router } from "express";

const require = createRequire(import.meta.url);

/**
 * The console's own policy: its script and styles from this origin only, no inline code, no
 * third party, images from this origin or the blobs it made of attachments it downloaded
 * with the key, API calls to this origin; nobody may frame it.
 */
const CONTENT_SECURITY_POLICY = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' blob: data:",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join("; ");

const securityHeaders: RequestHandler = (_req, res, next) => {
  res.setHeader("Content-Security-Policy", CONTENT_SECURITY_POLICY);
  res.setHeader("X-Content-Type-Options", "nosniff");
  res.setHeader("Referrer-Policy", "no-referrer");
  res.setHeader("X-Frame-Options", "DENY");
  next();
};

/** Where `apps/console` was built, or undefined when it was not (a start before `pnpm build`). */
function consoleDirectory(): string | undefined {
  try {
    const dist = path.join(path.dirname(require.resolve("@parley/console/package.json")), "dist");
    return existsSync(path.join(dist, "index.html")) ? dist : undefined;
  } catch {
    return undefined;
  }
}

/** The browser console at `/console/`: static files, keyless (the person signs in with a key in the page). */
export function consoleRoutes(): Router {
  const router = express.Router();
  const dist = consoleDirectory();
  router.use("/console", securityHeaders);
  router.get("/console", (req, res, next) => {
    if (req.path !== "/console") return next();
    res.redirect(301, "/console/");
  });
  if (!dist) {
    router.get(["/console/", "/console/*rest"], (_req, res) => {
      res
        .status(503)
        .type("text/plain")
        .send("The console is not built here: run `pnpm build`, then start Parley again.\n");
    });
    return router;
  }
  // Hashed file names: cached for good. The page itself is read again each time.
  router.use(
    "/console/assets",
    express.static(path.join(dist, "assets"), { index: false, immutable: true, maxAge: "365d" }),
  );
  router.get("/console/", (_req, res) => {
    res.setHeader("Cache-Control", "no-cache");
    res.sendFile(path.join(dist, "index.html"));
  });
  return router;
}
