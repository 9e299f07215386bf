import { createRequire } from "node:module";
import path from "node:path";
import { buildOpenApiDocument } from "@parley/schema";
import express, { type Router } from "express";

const require = createRequire(import.meta.url);

const page = `<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <title>Parley API reference</title>
  <link rel="stylesheet" href="/docs/assets/swagger-ui.css">
</head>
<body>
  <div id="reference"></div>
  <script src="/docs/assets/swagger-ui-bundle.js"></script>
  <script>
    window.ui = SwaggerUIBundle({ url: "/v1/openapi.json", dom_id: "#reference", deepLinking: true });
  </script>
</body>
</html>`;

/** `/v1/openapi.json` and the interactive reference at `/docs`, both public, both from the catalogue. */
export function referenceRoutes(publicBaseUrl: () => string): Router {
  const router = express.Router();
  const documents = new Map<string, unknown>();
  router.get("/v1/openapi.json", (_req, res) => {
    const serverUrl = `${publicBaseUrl()}/v1`;
    let document = documents.get(serverUrl);
    if (!document) {
      document = buildOpenApiDocument({ serverUrl });
      documents.set(serverUrl, document);
    }
    res.json(document);
  });
  const assets = path.dirname(require.resolve("swagger-ui-dist/package.json"));
  router.use("/docs/assets", express.static(assets, { index: false, maxAge: "1h" }));
  router.get(["/docs", "/docs/"], (_req, res) => {
    res.type("html").send(page);
  });
  return router;
}
