/** A project's safety boundary on the wire: the policy and the body that replaces it (src/http/api/safety.ts). */
import { Schema } from "effect"
import { CONFIRM_CATEGORIES, MAX_DOMAIN_LENGTH, MAX_DOMAINS } from "../limits.ts"
import { MaxString } from "../schemas.ts"

const Domains = (description: string) =>
  Schema.Array(MaxString(MAX_DOMAIN_LENGTH)).check(Schema.isMaxLength(MAX_DOMAINS)).annotate({ description })

const allowedDescription = "domains runs may open (empty: any domain not denied); an entry matches itself and its subdomains. " +
  "Host names or IP addresses, normalised: lower case, punycode (IDN), no trailing dot, a leading *. dropped; no scheme, port or path"
const deniedDescription = "domains runs may never open (wins over allowed_domains); matched as allowed_domains"
const confirmDescription = `action categories a person confirms through ask_human before the agent clicks (${CONFIRM_CATEGORIES.join(", ")}); default none`

export const SafetyPolicyResponse = Schema.Struct({
  allowed_domains: Schema.Array(Schema.String).annotate({ description: allowedDescription }),
  denied_domains: Schema.Array(Schema.String).annotate({ description: deniedDescription }),
  confirm_actions: Schema.Array(Schema.String).annotate({ description: confirmDescription }),
  updated_at: Schema.NullOr(Schema.String).annotate({ description: "null while the project has never set a policy" })
})

export const PutSafetyPolicyRequest = Schema.Struct({
  allowed_domains: Schema.optional(Domains(allowedDescription)),
  denied_domains: Schema.optional(Domains(deniedDescription)),
  confirm_actions: Schema.optional(Schema.Array(MaxString(64)).check(Schema.isMaxLength(CONFIRM_CATEGORIES.length * 2)).annotate({ description: confirmDescription }))
})
