import { createRequire } from "node:module";
import path from "node:path";
import { buildOpenApiDocument } from "@parley/schema";
import express, { type RequestHandler, type Router } from "express";

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

/** `GET /v1/openapi.json`, public, from the catalogue: mounted on the /v1 router before its key check. */
export function openApiDocumentRoute(publicBaseUrl: () => string): RequestHandler {
  const documents = new Map<string, unknown>();
  return (_req, res) => {
    const serverUrl = `${publicBaseUrl()}/v1`;
    let document = documents.get(serverUrl);
    if (!document) {
      document = buildOpenApiDocument({ serverUrl });
      documents.set(serverUrl, document);
    }
    res.json(document);
  };
}

/** The interactive reference at `/docs`, public, reading `/v1/openapi.json`. */
export function docsRoutes(): Router {
  const router = express.Router();
  const assets = path.dirname(require.resolve("swagger-ui-dist/package.json"));
  router.use("/docs/assets", express.static(assets, { index: false, maxAge: "1h" }));
  router.get(["/docs", "/docs/"], (_req, res) => {
    res.type("html").send(page);
  });
  return router;
}
