/**
 * Reads a provider's response body, stopping as soon as it passes `maxBytes` with the
 * caller's error: leaving the loop destroys the stream, which closes the connection.
 */
export async function readAtMost(
  body: AsyncIterable<Buffer>,
  maxBytes: number,
  tooLarge: (maxBytes: number) => Error,
): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    size += chunk.length;
    if (size > maxBytes) throw tooLarge(maxBytes);
    chunks.push(chunk);
  }
  return Buffer.concat(chunks);
}
