/** The account services over the database: users and sessions, tenants, bug reports, throttling. */
import { Layer } from "effect"
import { BugReports } from "./bug-reports.ts"
import { LoginThrottle } from "./login-throttle.ts"
import { Tenants } from "./tenants.ts"
import { Users } from "./users.ts"

export const AccountsLive = Layer.mergeAll(Users.layer, Tenants.layer, BugReports.layer).pipe(
  Layer.provideMerge(LoginThrottle.layer)
)
