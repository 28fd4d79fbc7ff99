import { defineConfig } from "vite";
import react from "@vitejs/plugin-react";

// The embeddable script: one self-contained file, `dist/vestibule.js`, defining `window.Vestibule`.
export default defineConfig({
  plugins: [react()],
  define: { "process.env.NODE_ENV": JSON.stringify("production") },
  build: {
    outDir: "dist",
    emptyOutDir: false,
    lib: { entry: "src/embed.tsx", name: "VestibuleModule", formats: ["iife"], fileName: () => "vestibule.js" },
  },
});
