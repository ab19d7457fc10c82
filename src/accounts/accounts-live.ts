/** The account services over the database: users and sessions, tenants, bug reports, throttling, mailed proofs. */
import { Layer } from "effect"
import { OutgoingMail } from "../mail/outgoing.ts"
import { AccountMail } from "./account-mail.ts"
import { BugReports } from "./bug-reports.ts"
import { LoginThrottle } from "./login-throttle.ts"
import { Sso } from "./sso.ts"
import { Tenants } from "./tenants.ts"
import { Users } from "./users.ts"

export const AccountsLive = Layer.mergeAll(Sso.layer, AccountMail.layer).pipe(
  Layer.provideMerge(Layer.mergeAll(Users.layer, Tenants.layer, BugReports.layer)),
  Layer.provideMerge(Layer.mergeAll(LoginThrottle.layer, OutgoingMail.layer))
)
