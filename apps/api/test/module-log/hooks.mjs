import { appendFileSync } from "node:fs";

/**
 * Module resolution hook (node:module `register`): appends every `@opentelemetry/*`
 * specifier the process resolves to the file named by PARLEY_MODULE_LOG.
 */
export async function resolve(specifier, context, nextResolve) {
  if (specifier.startsWith("@opentelemetry/") && process.env.PARLEY_MODULE_LOG) {
    appendFileSync(process.env.PARLEY_MODULE_LOG, `${specifier}\n`);
  }
  return nextResolve(specifier, context);
}
