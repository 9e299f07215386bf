import { z } from "zod";

/** Whether the pre-chat form asks for a field, and whether the visitor must answer it. */
export const prechatField = z.enum(["off", "optional", "required"]);
export type PrechatField = z.infer<typeof prechatField>;

/**
 * What the visitor sees in the chat panel, per channel. Every field has a default, so a
 * channel connected without settings (and every sandbox channel) is a plain chat.
 * Strings, as `pnpm admin connect-channel --setting key=value` gives them.
 */
export const webchatSettings = z.object({
  /** Shown above the conversation, as the business's first words; none by default. */
  greeting: z.string().trim().min(1).max(500).optional(),
  /** The pre-chat form's name field. */
  prechat_name: prechatField.default("off"),
  /** The pre-chat form's email field. */
  prechat_email: prechatField.default("off"),
  /** The launcher bubble's colour (widget.js), `#rgb` or `#rrggbb`; a page's `data-color` wins. */
  color: z
    .string()
    .regex(/^#([0-9a-f]{3}){1,2}$/i, "a colour as #rgb or #rrggbb")
    .optional(),
  /** The corner of the launcher bubble (widget.js); a page's `data-position` wins. */
  position: z.enum(["right", "left"]).default("right"),
});
export type WebchatSettings = z.infer<typeof webchatSettings>;

/** A stored channel's settings as the panel uses them: anything unreadable falls back to the defaults. */
export function webchatSettingsOf(stored: unknown): WebchatSettings {
  const parsed = webchatSettings.safeParse(stored ?? {});
  return parsed.success ? parsed.data : webchatSettings.parse({});
}
