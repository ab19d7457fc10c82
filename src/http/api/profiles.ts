/**
 * Profiles (`/v1/projects/{pid}/profiles`): reusable browser identities (cookies, local storage,
 * IndexedDB) for DoAnything sessions and Track monitors, with their interactive login.
 */
import { HttpApi, HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "effect/http-api"
import { BadRequest, Conflict, NotFound, PaymentRequired, TooManyRequests, ValidationError } from "../../domain/api-errors.ts"
import {
  ConfirmInteractiveLoginRequest,
  ConfirmInteractiveLoginResponse,
  CreateProfileRequest,
  InteractiveLoginResponse,
  ListProfilesQuery,
  PatchProfileRequest,
  ProfileListResponse,
  ProfileResponse,
  StartInteractiveLoginRequest
} from "../../domain/wire/profiles.ts"
import { ProfileIdParam, ProjectIdParam } from "./schemas.ts"
import { Authentication, Idempotency, RateLimit } from "./security.ts"

const strict = { errors: "all", onExcessProperty: "error" } as const
const ProfileParams = { ...ProjectIdParam, profile_id: ProfileIdParam }

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
      query: ListProfilesQuery,
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
