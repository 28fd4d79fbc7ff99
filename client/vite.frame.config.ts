import { resolve } from "node:path";
import { defineConfig } from "vite";

// The secure frame (docs/embedded-wallet.md), built to dist-frame/ for the gateway's frame origin:
// frame.html (served at /frame), approve.html (the approval window, served at /approve), loading.html (the social popup's first page, served at /loading)
// and their scripts in assets/, all under the base /frame/ (the gateway serves /frame/assets/*).
// assets/callback.js keeps a fixed name: the gateway's OAuth callback page names it. No React and
// no third-party origin: only the frame's own code and the vetted crypto it imports.
const root = resolve(import.meta.dirname, "src/frame");

export default defineConfig({
  root,
  base: "/frame/",
  define: { "process.env.NODE_ENV": JSON.stringify("production") },
  build: {
    outDir: resolve(import.meta.dirname, "dist-frame"),
    emptyOutDir: true,
    modulePreload: false,
    manifest: "manifest.json",
    rollupOptions: {
      input: { frame: resolve(root, "frame.html"), approve: resolve(root, "approve.html"), loading: resolve(root, "loading.html"), callback: resolve(root, "callback.ts") },
      output: {
        entryFileNames: (chunk) => (chunk.name === "callback" ? "assets/callback.js" : "assets/[name]-[hash].js"),
        chunkFileNames: "assets/[name]-[hash].js",
        assetFileNames: "assets/[name]-[hash][extname]",
      },
    },
  },
});
