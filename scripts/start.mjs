import { buildApi, root } from "./build-api.mjs";

// `pnpm start`: build what is needed, then the API and the worker in one process.
buildApi();
process.chdir(root);
await import(`${root}/apps/api/dist/main.js`);
