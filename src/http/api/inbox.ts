/** The project's console inbox (the `console_inbox` notification channel). Placeholder until built. */
import { HttpApiGroup } from "effect/http-api"

export class InboxApi extends HttpApiGroup.make("inbox").prefix("/v1/projects/:pid/inbox") {}
