CREATE TABLE "webchat_sessions" (
	"id" text PRIMARY KEY NOT NULL,
	"organization_id" text NOT NULL,
	"environment" "environment" NOT NULL,
	"channel_id" text NOT NULL,
	"token_hash" text NOT NULL,
	"visitor_name" text,
	"visitor_email" text,
	"contact_id" text,
	"conversation_id" text,
	"created_at" timestamp (3) with time zone DEFAULT now() NOT NULL,
	"last_seen_at" timestamp (3) with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "webchat_sessions" ADD CONSTRAINT "webchat_sessions_channel_id_channels_id_fk" FOREIGN KEY ("channel_id") REFERENCES "public"."channels"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "webchat_sessions" ADD CONSTRAINT "webchat_sessions_contact_id_contacts_id_fk" FOREIGN KEY ("contact_id") REFERENCES "public"."contacts"("id") ON DELETE set null ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "webchat_sessions" ADD CONSTRAINT "webchat_sessions_conversation_id_conversations_id_fk" FOREIGN KEY ("conversation_id") REFERENCES "public"."conversations"("id") ON DELETE set null ON UPDATE no action;--> statement-breakpoint
CREATE UNIQUE INDEX "webchat_sessions_token_key" ON "webchat_sessions" USING btree ("token_hash");--> statement-breakpoint
CREATE INDEX "webchat_sessions_channel_idx" ON "webchat_sessions" USING btree ("channel_id");