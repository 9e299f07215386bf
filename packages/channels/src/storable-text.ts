/**
 * Text from a provider as PostgreSQL can store it: NUL characters dropped, lone UTF-16
 * surrogates (a broken encoding's, which UTF-8 cannot hold) replaced by U+FFFD. What
 * customers send is taken as it comes, never refused for its characters.
 */
export function storableText(text: string): string {
  return text.replaceAll("\u0000", "").toWellFormed();
}
