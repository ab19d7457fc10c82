/**
 * Project secrets on the wire: a secret's metadata (never its value), the create and update
 * bodies, and the list (src/http/api/secrets.ts).
 */
import { Schema } from "effect"
import { SecretName } from "../run.ts"
import { MAX_ORIGIN_LENGTH, MAX_ORIGINS, MAX_VALUE_LENGTH } from "../limits.ts"
import { MaxString, OptionalNullable, Timestamp } from "../schemas.ts"
import { SECRET_FIELD_ANNOTATION } from "./common.ts"

export const SecretKind = Schema.Literals(["secret", "totp"]).annotate({
  description: "secret (default): a value typed as it is (a password, a user name, an API token); " +
    "totp: an otpauth://totp/ URI or a base32 seed, typed as its current one-time code"
})

/**
 * The value: write-only (`writeOnly` in the OpenAPI document) and marked as a secret field. The
 * length is checked by the service, so a refusal never repeats the value.
 */
const SecretValue = Schema.String.annotate({
  [SECRET_FIELD_ANNOTATION]: true,
  writeOnly: true,
  description: `write-only, 1 to ${MAX_VALUE_LENGTH} characters; never returned. For kind totp: an otpauth://totp/... URI or a base32 seed (SHA-1, 6 digits, 30 s)`
})

const Origins = Schema.Array(MaxString(MAX_ORIGIN_LENGTH)).check(Schema.isMinLength(1), Schema.isMaxLength(MAX_ORIGINS)).annotate({
  description: "where the value may be typed: origins such as https://example.com or http://127.0.0.1:8080, or https://*.example.com " +
    "for any subdomain (not the domain itself). A placeholder typed into a field of any other origin is refused and the step fails."
})

export const SecretResponse = Schema.Struct({
  id: Schema.String.annotate({ description: "sec_..." }),
  name: Schema.String.annotate({ description: "what runs name in secrets and placeholders carry" }),
  kind: SecretKind,
  origins: Schema.Array(Schema.String),
  description: Schema.NullOr(Schema.String),
  totp: Schema.NullOr(Schema.Struct({ digits: Schema.Int, period: Schema.Int, algorithm: Schema.String })).annotate({
    description: "for kind totp: the shape of its codes"
  }),
  placeholder: Schema.String.annotate({ description: "what the model writes for it: {{secret:name}} or {{totp:name}}" }),
  created_at: Timestamp,
  updated_at: Timestamp,
  value_updated_at: Timestamp,
  last_used_at: Schema.NullOr(Timestamp).annotate({ description: "when a run naming it last started" })
})

export const CreateSecretRequest = Schema.Struct({
  name: SecretName,
  kind: Schema.optional(SecretKind),
  value: SecretValue,
  origins: Origins,
  description: OptionalNullable(MaxString(500).annotate({ description: "shown to the model with the placeholder (what the value is for); not secret" }))
})

export const UpdateSecretRequest = Schema.Struct({
  value: Schema.optional(SecretValue),
  origins: Schema.optional(Origins),
  description: OptionalNullable(MaxString(500))
})

export const SecretListResponse = Schema.Struct({ items: Schema.Array(SecretResponse), next_cursor: Schema.NullOr(Schema.String) })
