import { defineConfig } from "vite";
import react from "@vitejs/plugin-react";

// The demo page is served by `vestibule serve` from client/dist at `/`.
export default defineConfig({
  plugins: [react()],
  // Pages: the demo dapp (`/`), the replay timeline (`/replay.html`), an embedding example
  // (`/embed-example.html`, which loads the script built by vite.embed.config.ts).
  build: { outDir: "dist", emptyOutDir: true, rollupOptions: { input: { main: "index.html", replay: "replay.html", embed: "embed-example.html" } } },
  test: { environment: "node" },
} as Parameters<typeof defineConfig>[0]);
