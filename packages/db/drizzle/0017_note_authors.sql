CREATE TABLE "note_deletions" (
	"note_id" text PRIMARY KEY NOT NULL,
	"organization_id" text NOT NULL,
	"environment" "environment" NOT NULL,
	"conversation_id" text NOT NULL,
	"author_key_id" text,
	"deleted_by_key_id" text NOT NULL,
	"note_created_at" timestamp (3) with time zone NOT NULL,
	"deleted_at" timestamp (3) with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "notes" ADD COLUMN "author_key_id" text;--> statement-breakpoint
ALTER TABLE "note_deletions" ADD CONSTRAINT "note_deletions_conversation_id_conversations_id_fk" FOREIGN KEY ("conversation_id") REFERENCES "public"."conversations"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "note_deletions_conversation_idx" ON "note_deletions" USING btree ("conversation_id");