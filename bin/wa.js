#!/usr/bin/env node
// `npx wa ...` runs with the project's Node 24 (first on PATH under npm), which runs .ts directly.
// Client commands (src/cli/client.ts) skip loading the server.
const clientCommands = ["run", "research", "search", "monitors", "mcp"]
if (clientCommands.includes(process.argv[2] ?? "")) {
  const { mainClient } = await import("../src/cli/client.ts")
  await mainClient(process.argv.slice(2))
} else {
  await import("../src/main.ts")
}
