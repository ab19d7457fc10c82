/** Project settings on the wire: the secret that signs the project's callbacks (src/http/api/project.ts). */
import { Schema } from "effect"

export const WebhookSecretResponse = Schema.Struct({
  secret: Schema.String.annotate({ description: "whsec_... Standard Webhooks secret; verify webhook-signature with it" })
})
