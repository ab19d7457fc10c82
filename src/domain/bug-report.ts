/**
 * A bug report's status. Every report is filed `open` (the bug_reports column's default) and no
 * route changes it yet: triage happens outside the service.
 */
export const BugReportStatuses = ["open"] as const
export type BugReportStatus = typeof BugReportStatuses[number]
