/**
 * The whole HTTP contract. It is the single source of the routes, the OpenAPI document at
 * /openapi.json and the typed client.
 */
import { HttpApi, OpenApi } from "effect/http-api"
import { transportHeaders } from "./openapi-transport.ts"
import { discriminatedUnions } from "./openapi-unions.ts"
import { eventStreams } from "./openapi-events.ts"
import { webhooks } from "./openapi-webhooks.ts"
import { researchArtifacts } from "./openapi-artifacts.ts"
import { ApiKeysApi } from "./api-keys.ts"
import { ControlApi } from "./control.ts"
import { DoAnythingApi, DoAnythingFlatApi, MediaApi } from "./do-anything.ts"
import { ProjectApi } from "./project.ts"
import { BillingApi } from "./billing.ts"
import { WebhookDeliveriesApi } from "./webhook-deliveries.ts"
import { WebSearchApi, WebSearchFlatApi } from "./web-search.ts"
import { DeepResearchApi, DeepResearchFlatApi, DeepResearchStandaloneApi } from "./deep-research.ts"
import { SystemApi } from "./system.ts"
import { MetricsApi } from "./metrics.ts"
import { InboxApi } from "./inbox.ts"
import { InboxMessagesApi } from "./inbox-messages.ts"
import { TrackApi, TrackFlatApi } from "./track.ts"
import { WebhookEndpointsApi } from "./webhook-endpoints.ts"
import { SecretsApi } from "./secrets.ts"
import { CacheScriptsApi } from "./cache-scripts.ts"
import { SkillsApi } from "./skills.ts"
import { SafetyApi } from "./safety.ts"
import { WorkspaceDownloadApi, WorkspacesApi, WorkspaceUploadApi } from "./workspaces.ts"
import { ProfilesApi } from "./profiles.ts"
import { DoAnythingArtifactsApi, RecordingReplayApi } from "./recordings.ts"
import { BillingPlansApi, StripeWebhookApi } from "./billing-plans.ts"
import { SchedulesApi } from "./schedules.ts"
import { AccountApi, AuthPublicApi, BugReportsApi, TenantsApi } from "./accounts.ts"
import { AccessKeysApi, DelegationsApi, DelegationServiceApi } from "./delegation.ts"

const contract = HttpApi.make("web-agent-service")
  .add(SystemApi)
  .add(MetricsApi)
  .add(ApiKeysApi)
  .add(ProjectApi)
  .add(BillingApi)
  .add(WebhookDeliveriesApi)
  .add(WebhookEndpointsApi)
  .add(SecretsApi)
  .add(CacheScriptsApi)
  .add(SkillsApi)
  .add(SafetyApi)
  .add(InboxApi)
  .add(DoAnythingApi)
  .add(InboxMessagesApi)
  .add(DoAnythingFlatApi)
  .add(WebSearchApi)
  .add(WebSearchFlatApi)
  .add(DeepResearchApi)
  .add(DeepResearchFlatApi)
  .add(DeepResearchStandaloneApi)
  .add(TrackApi)
  .add(TrackFlatApi)
  .add(MediaApi)
  .add(WorkspacesApi)
  .add(WorkspaceUploadApi)
  .add(WorkspaceDownloadApi)
  .add(ProfilesApi)
  .add(ControlApi)
  .add(DoAnythingArtifactsApi)
  .add(RecordingReplayApi)
  .add(BillingPlansApi)
  .add(StripeWebhookApi)
  .add(SchedulesApi)
  .add(AuthPublicApi)
  .add(AccountApi)
  .add(TenantsApi)
  .add(BugReportsApi)
  .add(DelegationServiceApi)
  .add(AccessKeysApi)
  .add(DelegationsApi)
  // Collect every schema failure so extra.errors[] lists all bad fields at once. Unknown body
  // fields are refused on every body (422 extra_forbidden): one policy, the one the generated
  // document states (additionalProperties: false on every request object). A misspelt optional
  // field would otherwise be dropped and the run go on with its default.
  .annotate(HttpApi.PayloadParseOptions, { errors: "all", onExcessProperty: "error" })
  .annotate(HttpApi.QueryParseOptions, { errors: "all" })
  .annotateMerge(OpenApi.annotations({
    title: "Web Agent Service",
    version: "1.0.0",
    description: "DoAnything, DeepResearch, WebSearch and Track over one REST API. " +
      "Every non-2xx response is {code, detail, extra}; clients branch on code."
  }))

// Idempotency-Key on every write that honours it, Retry-After and RateLimit on every 429; every event payload and each stream's event types;
// the bodies POSTed to users' endpoints (the webhooks section, deliveries' payload); DeepResearch's JSON artifacts;
// unions discriminated by `kind` as oneOf.
export class WebAgentApi extends contract.annotate(OpenApi.Transform, (spec) => discriminatedUnions(researchArtifacts(webhooks(eventStreams(transportHeaders(contract)(spec)))))) {}
