import { defineConfig } from "vite";
import react from "@vitejs/plugin-react";

// The demo page is served by `vestibule serve` from client/dist at `/`.
export default defineConfig({
  plugins: [react()],
  // Two pages: the demo dapp (`/`) and the replay timeline (`/replay.html`).
  build: { outDir: "dist", emptyOutDir: true, rollupOptions: { input: { main: "index.html", replay: "replay.html" } } },
  test: { environment: "node" },
} as Parameters<typeof defineConfig>[0]);
