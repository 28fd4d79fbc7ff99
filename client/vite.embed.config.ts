import { defineConfig } from "vite";
import react from "@vitejs/plugin-react";

// Self-contained scripts a page includes (one per build, since an IIFE bundle has one entry):
// - default: `dist/vestibule.js`, the embeddable widget, defining `window.Vestibule`;
// - `--mode dev-wallet`: `dist/dev-wallet.js`, the dev wallet, for tests to inject into any page
//   (Playwright's `addInitScript`) and for trying a host page without a browser wallet.
const SCRIPTS = {
  widget: { entry: "src/embed.tsx", name: "VestibuleModule", file: "vestibule.js" },
  "dev-wallet": { entry: "src/wallet/inject.ts", name: "VestibuleDevWallet", file: "dev-wallet.js" },
};

export default defineConfig(({ mode }) => {
  const script = mode === "dev-wallet" ? SCRIPTS["dev-wallet"] : SCRIPTS.widget;
  return {
    plugins: [react()],
    define: { "process.env.NODE_ENV": JSON.stringify("production") },
    build: {
      outDir: "dist",
      emptyOutDir: false,
      lib: { entry: script.entry, name: script.name, formats: ["iife"], fileName: () => script.file },
    },
  };
});
