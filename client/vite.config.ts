import { defineConfig } from "vite";
import react from "@vitejs/plugin-react";

// The pages `vestibule serve` serves from client/dist: the demo dapp (`/`), the replay timeline
// (`/replay.html`), the script-tag example (`/embed-example.html`, which loads the script built by
// vite.embed.config.ts) and the wagmi example (`/wagmi.html`).
export default defineConfig({
  plugins: [react()],
  build: {
    outDir: "dist",
    emptyOutDir: true,
    rollupOptions: { input: { main: "index.html", replay: "replay.html", embed: "embed-example.html", wagmi: "wagmi.html" } },
  },
  // Unit tests run in Node; component tests (`*.test.tsx`) declare `@vitest-environment happy-dom`.
  // Waits and test timeouts are patience, not speed (src/testing/setup.ts).
  test: { environment: "node", setupFiles: ["src/testing/setup.ts"], testTimeout: 60_000, hookTimeout: 60_000 },
} as Parameters<typeof defineConfig>[0]);
