/**
 * A session's email inbox (agentmail): the messages received at its `inbox_address`
 * (`/v1/projects/{pid}/do_anything/sessions/{sid}/inbox`), newest first. Not the console inbox of
 * monitors' notifications (inbox.ts).
 */
import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "effect/http-api"
import { BadRequest, NotFound } from "../../domain/api-errors.ts"
import { PageQuery } from "../../domain/pagination.ts"
import { InboxMessageListResponse, InboxMessageResponse } from "../../domain/wire/inbox-messages.ts"
import { EmailIdParam, ProjectIdParam, SessionIdParam } from "./schemas.ts"
import { Authentication, Idempotency, RateLimit } from "./security.ts"

const sessionParams = { ...ProjectIdParam, sid: SessionIdParam }

export class InboxMessagesApi extends HttpApiGroup.make("session_inbox")
  .add(
    HttpApiEndpoint.get("list", "/sessions/:sid/inbox", {
      params: sessionParams,
      query: PageQuery,
      success: InboxMessageListResponse,
      error: [BadRequest, NotFound]
    }),
    HttpApiEndpoint.get("get", "/sessions/:sid/inbox/:message_id", {
      params: { ...sessionParams, message_id: EmailIdParam },
      success: InboxMessageResponse,
      error: NotFound
    })
  )
  .middleware(Idempotency)
  .middleware(RateLimit)
  .middleware(Authentication)
  .prefix("/v1/projects/:pid/do_anything")
  .annotateMerge(OpenApi.annotations({
    title: "Session inbox",
    description: "Email received at a DoAnything session's inbox_address (agentmail), newest first."
  }))
{}
