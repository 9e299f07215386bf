CREATE TABLE "sms_opt_outs" (
	"id" text PRIMARY KEY NOT NULL,
	"organization_id" text NOT NULL,
	"environment" "environment" NOT NULL,
	"contact_id" text NOT NULL,
	"channel_id" text NOT NULL,
	"keyword" text NOT NULL,
	"created_at" timestamp (3) with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "messages" ADD COLUMN "sms_segments" integer;--> statement-breakpoint
ALTER TABLE "messages" ADD COLUMN "sms_encoding" text;--> statement-breakpoint
ALTER TABLE "sms_opt_outs" ADD CONSTRAINT "sms_opt_outs_contact_id_contacts_id_fk" FOREIGN KEY ("contact_id") REFERENCES "public"."contacts"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "sms_opt_outs" ADD CONSTRAINT "sms_opt_outs_channel_id_channels_id_fk" FOREIGN KEY ("channel_id") REFERENCES "public"."channels"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE UNIQUE INDEX "sms_opt_outs_contact_channel_key" ON "sms_opt_outs" USING btree ("organization_id","contact_id","channel_id");--> statement-breakpoint
CREATE INDEX "contacts_phone_digits_idx" ON "contacts" USING btree ("organization_id","environment",regexp_replace("phone", '[^0-9]', '', 'g'));--> statement-breakpoint
-- Every organization's test environment has a sandbox channel of each type: the ones that
-- existed before SMS get theirs here (new ones when they are created). The ULID generator
-- of 0002, made again for this session (OR REPLACE: 0002 may have run in the same one).
CREATE OR REPLACE FUNCTION pg_temp.parley_ulid() RETURNS text LANGUAGE plpgsql AS $$
DECLARE
  alphabet text := '0123456789ABCDEFGHJKMNPQRSTVWXYZ';
  remaining bigint := (extract(epoch FROM clock_timestamp()) * 1000)::bigint;
  result text := '';
BEGIN
  FOR i IN 1..10 LOOP
    result := substr(alphabet, (remaining % 32)::int + 1, 1) || result;
    remaining := remaining / 32;
  END LOOP;
  FOR i IN 1..16 LOOP
    result := result || substr(alphabet, floor(random() * 32)::int + 1, 1);
  END LOOP;
  RETURN result;
END
$$;
--> statement-breakpoint
INSERT INTO "channels" ("id", "organization_id", "environment", "type", "name", "provider")
SELECT 'chn_' || pg_temp.parley_ulid(), o."id", 'test', 'sms', 'Sandbox SMS', 'sandbox'
FROM "organizations" o
ON CONFLICT DO NOTHING;
