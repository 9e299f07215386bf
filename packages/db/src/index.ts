export * from "./client.js";
export * from "./embedded.js";
export * from "./ids.js";
export * from "./migrate.js";
export * from "./reusable-query.js";
export * from "./tables/index.js";
export * from "./tenant.js";
export * from "./test-database.js";
