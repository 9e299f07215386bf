DROP INDEX "contacts_list_idx";--> statement-breakpoint
DROP INDEX "custom_fields_list_idx";--> statement-breakpoint
DROP INDEX "tags_list_idx";--> statement-breakpoint
DROP INDEX "channels_list_idx";--> statement-breakpoint
DROP INDEX "conversations_list_idx";--> statement-breakpoint
DROP INDEX "conversations_recipient_idx";--> statement-breakpoint
DROP INDEX "notes_conversation_idx";--> statement-breakpoint
DROP INDEX "teams_list_idx";--> statement-breakpoint
DROP INDEX "messages_conversation_idx";--> statement-breakpoint
DROP INDEX "events_list_idx";--> statement-breakpoint
DROP INDEX "webhook_deliveries_list_idx";--> statement-breakpoint
DROP INDEX "webhook_endpoints_list_idx";--> statement-breakpoint
CREATE INDEX "contacts_list_idx" ON "contacts" USING btree ("organization_id","environment","created_at" DESC NULLS FIRST,"id" DESC NULLS FIRST);--> statement-breakpoint
CREATE INDEX "custom_fields_list_idx" ON "custom_fields" USING btree ("organization_id","environment","created_at" DESC NULLS FIRST,"id" DESC NULLS FIRST);--> statement-breakpoint
CREATE INDEX "tags_list_idx" ON "tags" USING btree ("organization_id","environment","created_at" DESC NULLS FIRST,"id" DESC NULLS FIRST);--> statement-breakpoint
CREATE INDEX "channels_list_idx" ON "channels" USING btree ("organization_id","environment","created_at" DESC NULLS FIRST,"id" DESC NULLS FIRST);--> statement-breakpoint
CREATE INDEX "conversations_list_idx" ON "conversations" USING btree ("organization_id","environment","created_at" DESC NULLS FIRST,"id" DESC NULLS FIRST);--> statement-breakpoint
CREATE INDEX "conversations_recipient_idx" ON "conversations" USING btree ("channel_id","recipient","created_at" DESC NULLS FIRST);--> statement-breakpoint
CREATE INDEX "notes_conversation_idx" ON "notes" USING btree ("conversation_id","created_at" DESC NULLS FIRST,"id" DESC NULLS FIRST);--> statement-breakpoint
CREATE INDEX "teams_list_idx" ON "teams" USING btree ("organization_id","environment","created_at" DESC NULLS FIRST,"id" DESC NULLS FIRST);--> statement-breakpoint
CREATE INDEX "messages_conversation_idx" ON "messages" USING btree ("conversation_id","created_at" DESC NULLS FIRST,"id" DESC NULLS FIRST);--> statement-breakpoint
CREATE INDEX "events_list_idx" ON "events" USING btree ("organization_id","environment","created_at" DESC NULLS FIRST,"id" DESC NULLS FIRST);--> statement-breakpoint
CREATE INDEX "webhook_deliveries_list_idx" ON "webhook_deliveries" USING btree ("endpoint_id","created_at" DESC NULLS FIRST,"id" DESC NULLS FIRST);--> statement-breakpoint
CREATE INDEX "webhook_endpoints_list_idx" ON "webhook_endpoints" USING btree ("organization_id","environment","created_at" DESC NULLS FIRST,"id" DESC NULLS FIRST);