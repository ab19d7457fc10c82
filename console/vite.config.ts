/**
 * The console's build: a React app served by the service at /console (src/http/server/console.ts),
 * written to console/dist (not committed). Built by `node console/build.ts`.
 */
import react from "@vitejs/plugin-react"
import { defineConfig } from "vite"

export default defineConfig({
  root: import.meta.dirname,
  base: "/console/",
  plugins: [react()],
  logLevel: "warn",
  build: {
    outDir: "dist",
    emptyOutDir: true,
    // Chromium of the last two years; no legacy polyfills.
    target: "es2022",
    sourcemap: false,
    assetsInlineLimit: 0
  }
})
