ALTER TABLE "channels" ADD COLUMN "secret_settings" text;--> statement-breakpoint
ALTER TABLE "conversations" ADD COLUMN "recipient" text;--> statement-breakpoint
CREATE INDEX "conversations_recipient_idx" ON "conversations" USING btree ("channel_id","recipient","created_at" DESC NULLS LAST);--> statement-breakpoint
CREATE UNIQUE INDEX "messages_inbound_provider_id_key" ON "messages" USING btree ("organization_id","environment","provider_message_id") WHERE "messages"."direction" = 'inbound' and "messages"."provider_message_id" is not null;