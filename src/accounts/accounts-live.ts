/** The account services over the database: users and sessions, tenants, bug reports, throttling. */
import { Layer } from "effect"
import { BugReports } from "./bug-reports.ts"
import { LoginThrottle } from "./login-throttle.ts"
import { Sso } from "./sso.ts"
import { Tenants } from "./tenants.ts"
import { Users } from "./users.ts"

export const AccountsLive = Sso.layer.pipe(
  Layer.provideMerge(Layer.mergeAll(Users.layer, Tenants.layer, BugReports.layer)),
  Layer.provideMerge(LoginThrottle.layer)
)
