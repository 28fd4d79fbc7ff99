import { defineConfig } from "vite";
import react from "@vitejs/plugin-react";

// The demo page is served by `vestibule serve` from client/dist at `/`.
export default defineConfig({
  plugins: [react()],
  build: { outDir: "dist", emptyOutDir: true },
  test: { environment: "node" },
} as Parameters<typeof defineConfig>[0]);
