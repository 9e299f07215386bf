/** Messages for the provider codes the sandbox produces; unknown codes get a generic one. */
const knownErrors: Record<string, string> = {
  "131047": "Re-engagement message: more than 24 hours have passed since the customer last replied",
  "131026": "Message undeliverable",
  "131051": "Unsupported message type",
  "131053": "Media upload error",
  "130429": "Rate limit hit",
  "131000": "Something went wrong",
  "131049": "This message was not delivered to maintain healthy ecosystem engagement",
  "551": "This person isn't available right now",
  "10": "(#10) This message is sent outside of allowed window.",
  "21610": "Attempt to send to unsubscribed recipient",
};

export function providerError(code: string): { code: string; message: string } {
  return { code, message: knownErrors[code] ?? `Sandbox failure ${code}` };
}
