// Provided by packages/db/src/vitest-global-setup.ts.
declare module "vitest" {
  export interface ProvidedContext {
    databaseUrl: string;
  }
}

export {};
