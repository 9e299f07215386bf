/**
 * The typed Parley client. Its resources are derived from `@parley/schema` in the SDK
 * issue; until then this package only pins the version it speaks.
 */
export const API_VERSION = "v1";
export const DEFAULT_BASE_URL = "http://localhost:3000/v1";
