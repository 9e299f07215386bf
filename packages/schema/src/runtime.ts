import type { api } from "./catalogue.js";
import type { HttpMethod, Operation } from "./operation.js";
import { routeTable } from "./routes.generated.js";

// `@parley/schema/runtime`: what a client needs at run time, without zod (the SDK bundles
// only this; the catalogue's types come from `@parley/schema` and cost nothing at run time).
export { type EventType, eventTypes } from "./resources/event-types.js";
export {
  acceptedUploadTypes,
  cannotCarryMessage,
  MAX_UPLOAD_BYTES,
  type MediaKind,
  mediaKindOf,
  mediaKinds,
  uploadTypesByExtension,
} from "./resources/upload-types.js";

/** One operation's route. `operation` is never set: it carries the operation's type for clients' generics. */
export interface Route<O extends Operation = Operation> {
  readonly id: string;
  readonly method: HttpMethod;
  readonly path: string;
  readonly idempotent: boolean;
  readonly operation?: O;
}

/** The operation a route stands for. */
export type OperationOf<R> = R extends Route<infer O> ? O : never;

type Catalogue = typeof api;

/** Every route of the catalogue, grouped as `api` is. */
export type Routes = {
  readonly [G in keyof Catalogue]: {
    readonly [K in keyof Catalogue[G]]: Catalogue[G][K] extends Operation ? Route<Catalogue[G][K]> : never;
  };
};

export const routes: Routes = routeTable;
