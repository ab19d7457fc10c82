/** Project webhook endpoints (the `global_webhook` notification channel). Placeholder until built. */
import { HttpApiGroup } from "effect/http-api"

export class WebhookEndpointsApi extends HttpApiGroup.make("webhook_endpoints").prefix("/v1/projects/:pid/webhooks") {}
