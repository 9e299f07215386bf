ALTER TABLE "channels" ADD COLUMN "provider_account" text GENERATED ALWAYS AS (case
        when provider = 'meta' and type = 'whatsapp' then settings->>'phone_number_id'
        when provider = 'meta' and type = 'messenger' then settings->>'page_id'
        when provider = 'meta' and type = 'instagram' then settings->>'instagram_account_id'
        when provider = 'smtp' and type = 'email' then lower(settings->>'address')
      end) STORED;--> statement-breakpoint
CREATE UNIQUE INDEX "channels_provider_account_key" ON "channels" USING btree ("provider_account","type");