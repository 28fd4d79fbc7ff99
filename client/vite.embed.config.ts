import { readFileSync } from "node:fs";
import { defineConfig, type UserConfig } from "vite";
import react from "@vitejs/plugin-react";

// The embeddable script, built in two steps (`npm run build` runs both, chunks first):
// - `--mode chunks`: the core chunk (`src/embed/core.ts`: transport, mirror, charts, wallet effects,
//   the host provider) and everything it loads lazily (the modal chunk with React and the views, the
//   optional parts), as ES modules with content hashes in `dist/vestibule/`, and a manifest;
// - `--mode loader`: `dist/vestibule.js`, the classic script a host page includes (an IIFE, so
//   `Vestibule.create` is there synchronously), which knows the core chunk's hashed name from the
//   manifest and loads it next to itself.
// - `--mode dev-wallet`: `dist/dev-wallet.js`, the dev wallet, for tests to inject into any page
//   (Playwright's `addInitScript`) and for trying a host page without a browser wallet.
// - `--mode dev-solana-wallet`: `dist/dev-solana-wallet.js`, the dev Solana wallet (Wallet Standard),
//   likewise.

const production = { "process.env.NODE_ENV": JSON.stringify("production") };

function chunks(): UserConfig {
  return {
    plugins: [react()],
    define: production,
    build: {
      outDir: "dist",
      emptyOutDir: false,
      manifest: "vestibule/manifest.json",
      modulePreload: false,
      rollupOptions: {
        input: { core: "src/embed/core.ts" },
        preserveEntrySignatures: "strict",
        output: { format: "es", entryFileNames: "vestibule/[name]-[hash].js", chunkFileNames: "vestibule/[name]-[hash].js" },
      },
    },
  };
}

function loader(): UserConfig {
  const manifest: Record<string, { file: string; isEntry?: boolean }> = JSON.parse(readFileSync("dist/vestibule/manifest.json", "utf8"));
  const core = manifest["src/embed/core.ts"]?.file;
  if (!core) throw new Error("build the chunks first (vite build --config vite.embed.config.ts --mode chunks)");
  return {
    define: { ...production, __VESTIBULE_CORE__: JSON.stringify(core) },
    build: {
      outDir: "dist",
      emptyOutDir: false,
      lib: { entry: "src/embed/loader.ts", name: "VestibuleLoader", formats: ["iife"], fileName: () => "vestibule.js" },
    },
  };
}

function devWallet(): UserConfig {
  return {
    define: production,
    build: {
      outDir: "dist",
      emptyOutDir: false,
      lib: { entry: "src/wallet/inject.ts", name: "VestibuleDevWallet", formats: ["iife"], fileName: () => "dev-wallet.js" },
    },
  };
}

function devSolanaWallet(): UserConfig {
  return {
    define: production,
    build: {
      outDir: "dist",
      emptyOutDir: false,
      lib: { entry: "src/wallet/solana/inject.ts", name: "VestibuleDevSolanaWallet", formats: ["iife"], fileName: () => "dev-solana-wallet.js" },
    },
  };
}

const MODES: Record<string, () => UserConfig> = { chunks, loader, "dev-wallet": devWallet, "dev-solana-wallet": devSolanaWallet };
export default defineConfig(({ mode }) => (MODES[mode] ?? chunks)());
