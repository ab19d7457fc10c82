/**
 * Profiles on the wire: a profile, the list and its query, the create and update bodies, and the
 * interactive login's bodies and answers (src/http/api/profiles.ts).
 */
import { Schema } from "effect"
import { CALLBACK_URL_MAX_LENGTH, callbackUrlFormProblem } from "../callback-url.ts"
import { ProfileId } from "../id-schemas.ts"
import {
  CUSTOMER_USER_ID_MAX,
  DISPLAY_LABEL_MAX,
  PROFILE_NAME_MAX,
  profileFields,
  ProfileState,
  SELECTOR_MAX,
  SITE_ID_MAX
} from "../profile.ts"
import { PageQuery } from "../pagination.ts"
import { MaxString, OptionalNullable, Timestamp } from "../schemas.ts"

const NullableTimestamp = Schema.NullOr(Timestamp)

export const ProfileResponse = Schema.Struct({
  id: Schema.String.annotate({ description: "prof_..." }),
  project_id: Schema.String,
  name: Schema.NullOr(Schema.String),
  customer_user_id: Schema.NullOr(Schema.String),
  state: ProfileState.annotate({
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
  profile_id: OptionalNullable(ProfileId.check(Schema.isMaxCodePoints(64))).annotate({ description: "an existing profile; omitted: a new one is created" }),
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
  state: ProfileState.annotate({ description: "the profile's state once the login session started (login_pending)" }),
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
  state: ProfileState.annotate({ description: "the profile's state after the probe: active (signed in, or the probe could not tell), logged_out" }),
  probe_result: Schema.String.annotate({ description: "logged_in, logged_out, or unknown (the start URL did not load)" }),
  final_url: Schema.NullOr(Schema.String).annotate({ description: "where the probe's page ended after redirects" }),
  reason: Schema.String.annotate({ description: "which rule of the probe decided" })
})

/** The query of the profile list: a page, of one end user. */
export const ListProfilesQuery = { ...PageQuery, customer_user_id: Schema.optional(MaxString(CUSTOMER_USER_ID_MAX)) }
