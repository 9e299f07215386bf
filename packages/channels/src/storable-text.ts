/** A lone UTF-16 surrogate, which a broken encoding can produce and UTF-8 cannot hold. */
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;

/**
 * Text from a provider as PostgreSQL can store it: NUL characters dropped, lone surrogates
 * replaced. What customers send is taken as it comes, never refused for its characters.
 */
export function storableText(text: string): string {
  return text.replace(/\u0000/g, "").replace(LONE_SURROGATE, "\uFFFD");
}
