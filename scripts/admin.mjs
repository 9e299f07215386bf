import { buildApi, root } from "./build-api.mjs";

// `pnpm --silent admin <command> ... --json`: one JSON object on stdout, nothing else.
buildApi();
process.chdir(root);
await import(`${root}/apps/api/dist/admin.js`);
