/** API keys on the wire: a key, the key a create answers (with its secret once), their list, the create body (src/http/api/api-keys.ts). */
import { Schema } from "effect"
import { MaxString, OptionalNullable, Timestamp } from "../schemas.ts"
import { secretField } from "./common.ts"

export const ApiKeyScope = Schema.Literals(["admin", "run"]).annotate({
  description: "admin: manage API keys and read the webhook secret, plus everything run may; run: use the products (sessions, runs, research, searches)"
})

export const ApiKeyResponse = Schema.Struct({
  id: Schema.String,
  project_id: Schema.String,
  user_id: Schema.NullOr(Schema.String),
  prefix: Schema.String,
  name: Schema.NullOr(Schema.String),
  created_at: Timestamp,
  disabled_at: Schema.optional(Schema.NullOr(Timestamp)),
  grace_until: Schema.optional(Schema.NullOr(Timestamp)),
  last_used_at: Schema.optional(Schema.NullOr(Timestamp)),
  scope: ApiKeyScope,
  created_by_key_id: Schema.NullOr(Schema.String).annotate({
    description: "the key that created this one over the API (audit only; revoking it does not revoke this key); null for the bootstrap and CLI keys"
  })
})

export const ApiKeyCreatedResponse = Schema.Struct({
  ...ApiKeyResponse.fields,
  secret_token: secretField(Schema.String, "the full key")
})

export const ApiKeyListResponse = Schema.Struct({
  items: Schema.Array(ApiKeyResponse),
  total: Schema.Int,
  next_cursor: Schema.NullOr(Schema.String)
})

export const CreateApiKeyRequest = Schema.Struct({
  name: OptionalNullable(MaxString(100)),
  scope: OptionalNullable(ApiKeyScope).annotate({ description: "default (absent or null): run" })
})
