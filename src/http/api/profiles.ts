/**
 * Profiles (`/v1/projects/{pid}/profiles`): reusable browser identities (cookies, local storage,
 * IndexedDB) for DoAnything sessions and Track monitors, with their interactive login.
 */
import { Schema } from "effect"
import { HttpApi, HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "effect/http-api"
import { CALLBACK_URL_MAX_LENGTH, callbackUrlFormProblem } from "../../domain/callback-url.ts"
import {
  CUSTOMER_USER_ID_MAX,
  DISPLAY_LABEL_MAX,
  PROFILE_NAME_MAX,
  profileFields,
  SELECTOR_MAX,
  SITE_ID_MAX
} from "../../domain/profile.ts"
import { BadRequest, Conflict, NotFound, PaymentRequired, TooManyRequests, ValidationError } from "../../domain/api-errors.ts"
import { PageQuery } from "../../domain/pagination.ts"
import { MaxString, OptionalNullable, ProjectIdParam, Timestamp } from "./schemas.ts"
import { Authentication, Idempotency, RateLimit } from "./security.ts"

const NullableTimestamp = Schema.NullOr(Timestamp)

export const ProfileResponse = Schema.Struct({
  id: Schema.String.annotate({ description: "prof_..." }),
  project_id: Schema.String,
  name: Schema.NullOr(Schema.String),
  customer_user_id: Schema.NullOr(Schema.String),
  state: Schema.String.annotate({
    description: "active (default), login_pending (an interactive login session is open), logged_out (the last login probe found the site signed out)"
  }),
  last_used_at: NullableTimestamp.annotate({ description: "when a session last took the profile" }),
  last_alive_at: NullableTimestamp.annotate({ description: "when a login probe last found it signed in" }),
  last_failure_reason: Schema.NullOr(Schema.String),
  proxy_country_code: Schema.NullOr(Schema.String).annotate({ description: "stored; no proxy is used yet" }),
  bb_context_id: Schema.NullOr(Schema.String).annotate({ description: "always null (no Browserbase context behind a profile)" }),
  cookie_domains: Schema.Array(Schema.String).annotate({ description: "legacy bring-your-own-cookies field; always empty" }),
  has_saved_state: Schema.Boolean,
  state_saved_at: NullableTimestamp,
  leased_by_session_id: Schema.NullOr(Schema.String).annotate({ description: "the open session holding the profile, if any" }),
  created_at: Timestamp,
  updated_at: Timestamp
})

export const ProfileListResponse = Schema.Struct({
  items: Schema.Array(ProfileResponse),
  total: Schema.Int,
  next_cursor: Schema.NullOr(Schema.String)
})

export const CreateProfileRequest = Schema.Struct(profileFields)
export const PatchProfileRequest = Schema.Struct(profileFields)

const StartUrl = MaxString(CALLBACK_URL_MAX_LENGTH).check(
  Schema.makeFilter((url: string) => callbackUrlFormProblem(url)?.replaceAll("callback_url", "start_url") ?? true, {
    expected: "an absolute http or https URL",
    toJsonSchema: () => [{ pattern: "^[hH][tT][tT][pP][sS]?://" }, true]
  })
).annotate({ format: "uri" })

const SiteId = Schema.String.check(Schema.isMinCodePoints(1), Schema.isMaxCodePoints(SITE_ID_MAX))

export const StartInteractiveLoginRequest = Schema.Struct({
  profile_id: OptionalNullable(MaxString(64)).annotate({ description: "an existing profile; omitted: a new one is created" }),
  name: OptionalNullable(MaxString(PROFILE_NAME_MAX)),
  customer_user_id: OptionalNullable(MaxString(CUSTOMER_USER_ID_MAX)),
  start_url: StartUrl.annotate({ description: "a page of the site that needs the login (the account page), also what confirm probes" }),
  site_id: SiteId,
  display_label: OptionalNullable(MaxString(DISPLAY_LABEL_MAX)),
  instructions: OptionalNullable(MaxString(10_000)).annotate({ description: "instructions of the login session's first run, making it an agent run (needs a model); default: the run opens start_url and waits for the person, no model needed" }),
  logged_in_selector: OptionalNullable(MaxString(SELECTOR_MAX)).annotate({ description: "probe: present means logged_in, absent logged_out" }),
  logged_out_selector: OptionalNullable(MaxString(SELECTOR_MAX)).annotate({ description: "probe: present means logged_out" })
})

export const InteractiveLoginResponse = Schema.Struct({
  profile_id: Schema.String,
  session_id: Schema.String.annotate({ description: "the login session (DoAnything, keep_alive), holding the profile until confirm" }),
  run_id: Schema.String,
  site_id: Schema.String,
  start_url: Schema.String,
  state: Schema.String,
  control_url: Schema.NullOr(Schema.String).annotate({
    description: "the live view for the person: the login run's take-control URL (its standalone_control_url, reason \"interactive login\"); " +
      "opening it pauses the run and hands the browser to the person. No API key needed; it works until control_url_exp unless " +
      "someone connected. null when the login run was not running within 30 s or already ended (ask for one with intervene " +
      "take_control on run_id)"
  }),
  control_url_exp: Schema.NullOr(Schema.Number).annotate({ description: "Unix seconds: control_url stops working if nobody opened it by then (intervene refresh_control_url on run_id gives a new one)" }),
  profile: ProfileResponse
})

export const ConfirmInteractiveLoginRequest = Schema.Struct({
  site_id: SiteId,
  display_label: OptionalNullable(MaxString(DISPLAY_LABEL_MAX))
})

export const ConfirmInteractiveLoginResponse = Schema.Struct({
  profile_id: Schema.String,
  state: Schema.String,
  probe_result: Schema.String.annotate({ description: "logged_in, logged_out, or unknown (the start URL did not load)" }),
  final_url: Schema.NullOr(Schema.String).annotate({ description: "where the probe's page ended after redirects" }),
  reason: Schema.String.annotate({ description: "which rule of the probe decided" })
})

const strict = { errors: "all", onExcessProperty: "error" } as const
const ProfileParams = { ...ProjectIdParam, profile_id: MaxString(64) }

export class ProfilesApi extends HttpApiGroup.make("profiles")
  .add(
    HttpApiEndpoint.post("create", "/", {
      params: ProjectIdParam,
      payload: CreateProfileRequest,
      success: ProfileResponse.annotate({ httpApiStatus: 201 }),
      error: ValidationError
    }).annotate(HttpApi.PayloadParseOptions, strict),
    HttpApiEndpoint.get("list", "/", {
      params: ProjectIdParam,
      query: { ...PageQuery, customer_user_id: Schema.optional(MaxString(CUSTOMER_USER_ID_MAX)) },
      success: ProfileListResponse,
      error: BadRequest
    }).annotate(OpenApi.Description, "Newest first; `total` counts every profile of the project (with the customer_user_id filter, those of that user)."),
    HttpApiEndpoint.post("login", "/login", {
      params: ProjectIdParam,
      payload: StartInteractiveLoginRequest,
      success: InteractiveLoginResponse.annotate({ httpApiStatus: 201 }),
      error: [ValidationError, NotFound, Conflict, TooManyRequests, PaymentRequired]
    }).annotate(HttpApi.PayloadParseOptions, strict).annotate(
      OpenApi.Description,
      "Starts an interactive login: a kept-alive DoAnything session holding the profile (a new one unless profile_id is given) " +
        "whose first run opens start_url and holds it for a person (no model needed), and returns control_url, the live view " +
        "(take control) of that run. The person opens it, which pauses the run (run.user_paused), and signs in on the live page; " +
        "then POST /profiles/{id}/confirm saves and probes the state. With instructions the login run is an agent run instead " +
        "(the agent signs in; the control URL still lets a person step in), which needs a configured model: 422 validation_error " +
        "(type model_not_configured on instructions) otherwise. 409 profile_in_use when another open session holds the profile."
    ),
    HttpApiEndpoint.get("get", "/:profile_id", { params: ProfileParams, success: ProfileResponse, error: NotFound }),
    HttpApiEndpoint.patch("update", "/:profile_id", {
      params: ProfileParams,
      payload: PatchProfileRequest,
      success: ProfileResponse,
      error: [ValidationError, NotFound]
    }).annotate(HttpApi.PayloadParseOptions, strict).annotate(OpenApi.Description, "Rename, or change customer_user_id / proxy_country_code; a field given as null clears it."),
    HttpApiEndpoint.delete("delete", "/:profile_id", {
      params: ProfileParams,
      success: HttpApiSchema.NoContent,
      error: [NotFound, Conflict]
    }).annotate(OpenApi.Description, "Deletes the profile and its saved state. 409 profile_in_use while an open session holds it."),
    HttpApiEndpoint.post("confirm", "/:profile_id/confirm", {
      params: ProfileParams,
      payload: ConfirmInteractiveLoginRequest,
      success: ConfirmInteractiveLoginResponse,
      error: [ValidationError, NotFound, Conflict]
    }).annotate(HttpApi.PayloadParseOptions, strict).annotate(
      OpenApi.Description,
      "Ends the site's interactive login: closes the login session if still open (its browser state is saved into the profile, " +
        "encrypted), then opens start_url in a fresh context with the saved state and reports probe_result. Rule: logged_out_selector " +
        "present → logged_out; logged_in_selector given → logged_in iff present; 401/403 → logged_out; redirected to a sign-in page " +
        "(path segment login/signin/auth/sso/oauth..., or host login./auth./accounts./sso./id.) → logged_out; a visible password " +
        "field → logged_out; else logged_in. logged_in sets state active and last_alive_at; logged_out sets state logged_out and " +
        "last_failure_reason. 409 interactive_login_not_started when no login was started for site_id."
    )
  )
  .middleware(Idempotency)
  .middleware(RateLimit)
  .middleware(Authentication)
  .prefix("/v1/projects/:pid/profiles")
  .annotateMerge(OpenApi.annotations({
    title: "Profiles",
    description: "One whole browser identity per end user (cookies, local storage, IndexedDB), encrypted at rest (AES-256-GCM). " +
      "A session with profile_id starts from the profile's saved state and saves it back at every run end and when it closes; " +
      "a profile serves one open session at a time (409 profile_in_use). Monitors with profile_id read their pages with it."
  }))
{}
